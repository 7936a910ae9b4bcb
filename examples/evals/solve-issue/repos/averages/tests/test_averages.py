import unittest

from averages import average


class AverageTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(average([1, 2, 3]), 2)
