import unittest

from bank import Account


class AccountTest(unittest.TestCase):
    def test_withdraw(self):
        a = Account(100)
        a.withdraw(30)
        self.assertEqual(a.balance, 70)
