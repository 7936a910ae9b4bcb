import unittest

from wrapper import wrap


class WrapTest(unittest.TestCase):
    def test_explicit_width(self):
        self.assertEqual(wrap("aa bb cc", width=5), ["aa bb", "cc"])
