import unittest

from kvparse import parse


class ParseTest(unittest.TestCase):
    def test_pairs(self):
        self.assertEqual(parse("a=1; b = 2;"), {"a": "1", "b": "2"})
