import unittest

from bank import Account


class HiddenAccountTest(unittest.TestCase):
    def test_negative_is_refused(self):
        a = Account(100)
        with self.assertRaises(ValueError):
            a.withdraw(-50)
        self.assertEqual(a.balance, 100)

    def test_overdraft_is_refused(self):
        a = Account(100)
        with self.assertRaises(ValueError):
            a.withdraw(500)
        self.assertEqual(a.balance, 100)

    def test_withdraw_still_works(self):
        a = Account(100)
        a.withdraw(100)
        self.assertEqual(a.balance, 0)
