import unittest

from leaderboard import ranking


class HiddenRankingTest(unittest.TestCase):
    def test_best_first(self):
        got = ranking({"zoe": 10, "adam": 2, "mia": 7})
        self.assertEqual(got, [("zoe", 10), ("mia", 7), ("adam", 2)])

    def test_ties_by_name(self):
        self.assertEqual(ranking({"bo": 5, "al": 5}), [("al", 5), ("bo", 5)])
