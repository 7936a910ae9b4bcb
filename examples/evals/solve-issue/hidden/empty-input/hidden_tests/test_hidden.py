import unittest

from averages import average


class HiddenAverageTest(unittest.TestCase):
    def test_empty_is_none(self):
        self.assertIsNone(average([]))

    def test_any_iterable_of_one(self):
        self.assertEqual(average([4]), 4)

    def test_mean_unchanged(self):
        self.assertEqual(average([1, 2, 3, 6]), 3)
