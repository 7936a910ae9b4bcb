import unittest

from kvparse import parse


class HiddenParseTest(unittest.TestCase):
    def test_value_with_equals(self):
        self.assertEqual(parse("token=abc==; user=me"), {"token": "abc==", "user": "me"})

    def test_plain_pairs_unchanged(self):
        self.assertEqual(parse("a=1; b = 2;"), {"a": "1", "b": "2"})

    def test_empty(self):
        self.assertEqual(parse(""), {})
