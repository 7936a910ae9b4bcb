import unittest
from fractions import Fraction

from statskit import mean, median


class MeanTest(unittest.TestCase):
    def test_integers(self) -> None:
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_fractions(self) -> None:
        self.assertEqual(mean([Fraction(1, 2), Fraction(1, 4)]), Fraction(3, 8))

    def test_empty(self) -> None:
        with self.assertRaises(ValueError):
            mean([])


class MedianTest(unittest.TestCase):
    def test_odd_count(self) -> None:
        self.assertEqual(median([3, 1, 2]), 2)

    def test_even_count(self) -> None:
        self.assertEqual(median([4, 1, 3, 2]), 2.5)

    def test_input_is_left_unchanged(self) -> None:
        values = [3, 1, 2]
        median(values)
        self.assertEqual(values, [3, 1, 2])

    def test_empty(self) -> None:
        with self.assertRaises(ValueError):
            median([])


if __name__ == "__main__":
    unittest.main()
