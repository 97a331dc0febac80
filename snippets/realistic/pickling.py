"""pickling: an order cache snapshotted with pickle, restored, and cloned with copy.deepcopy.

Written like ordinary code, without the oracle's instrumentation. The C
pickler calls this file's hooks directly (Money.__reduce__ and
Order.__getstate__ while dumping; make_money and Order.__setstate__ while
loading); copy.deepcopy calls the same hooks from copy.py's frames.
"""
import copy
import pickle


class Money:
    __slots__ = ("cents", "currency")

    def __init__(self, cents, currency):
        self.cents = cents
        self.currency = currency

    def __reduce__(self):
        return (make_money, (self.cents, self.currency))


def make_money(cents, currency):
    return Money(cents, currency)


class Order:
    def __init__(self, order_id, customer, lines):
        self.order_id = order_id
        self.customer = customer
        self.lines = lines
        self._total = None

    def total(self):
        if self._total is None:
            self._total = sum(qty * price.cents for _, qty, price in self.lines)
        return self._total

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_total"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._total = None


def make_orders(n):
    return [
        Order(i, "customer-%d" % (i % 37), [("sku-%d" % j, j % 5 + 1, Money(199 * j + i, "EUR")) for j in range(8)])
        for i in range(n)
    ]


def snapshot(orders):
    return pickle.dumps(orders, protocol=pickle.HIGHEST_PROTOCOL)


def restore(blob):
    return pickle.loads(blob)


def clone(orders):
    return copy.deepcopy(orders)


def main():
    orders = make_orders(200)
    while True:
        restored = restore(snapshot(orders))
        copies = clone(orders[:20])
        sum(order.total() for order in restored + copies)


if __name__ == "__main__":
    main()
