import unittest

from leaderboard import ranking


class RankingTest(unittest.TestCase):
    def test_one_player(self):
        self.assertEqual(ranking({"ann": 3}), [("ann", 3)])
