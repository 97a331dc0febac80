"""records: dataclass records built, validated and summarised, as an inventory service would.

Written like ordinary code, without the oracle's instrumentation. On 3.15
the class call runs the generated __init__ under an interpreter shim
frame ('__init__', no line): every sampler must name it as the reference
does.
"""
from dataclasses import dataclass, field


@dataclass
class Item:
    sku: str
    quantity: int
    price: float
    tags: list = field(default_factory=list)

    def value(self):
        return self.quantity * self.price


@dataclass(frozen=True)
class Warehouse:
    name: str
    items: tuple


def build_items(n):
    return [Item("sku-%d" % i, i % 17, 1.5 + i % 7, ["a"] if i % 3 else []) for i in range(n)]


def validate(items):
    return [it for it in items if it.quantity > 0 and it.price > 0]


def summarise(warehouse):
    return sum(it.value() for it in warehouse.items)


def main():
    while True:
        items = validate(build_items(300))
        summarise(Warehouse("main", tuple(items)))


if __name__ == "__main__":
    main()
