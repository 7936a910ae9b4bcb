import unittest

from wrapper import wrap


class HiddenWrapTest(unittest.TestCase):
    def test_default_is_80(self):
        text = " ".join(["word"] * 30)
        lines = wrap(text)
        self.assertTrue(all(len(line) <= 80 for line in lines))
        self.assertEqual(len(lines[0]), 79)

    def test_short_text_is_one_line(self):
        self.assertEqual(wrap("the quick brown fox"), ["the quick brown fox"])

    def test_explicit_width_still_works(self):
        self.assertEqual(wrap("aa bb cc", width=5), ["aa bb", "cc"])
