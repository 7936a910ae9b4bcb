import unittest

from pager import page_count


class PageCountTest(unittest.TestCase):
    def test_count(self):
        self.assertEqual(page_count(list(range(25)), 10), 3)
