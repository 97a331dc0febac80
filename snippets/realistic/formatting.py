"""formatting: invoices rendered as text with f-strings, str.format, %-formatting, string.Template and textwrap.

Written like ordinary code, without the oracle's instrumentation. Money
formats itself: f-strings and str.format call Money.__format__, and
%-formatting and Template's substitution call Money.__str__, from C, right
on the frame that formats (Template's from string.py's own frames).
"""
import string
import textwrap

LETTER = string.Template("Dear $name,\n\nyour invoice $number comes to $total, due on $due.\n")
NOTES = (
    "Payment is due within thirty days of the invoice date. Late payments accrue interest at the "
    "statutory rate; partial deliveries are invoiced separately and may be paid together."
)


class Money:
    def __init__(self, cents):
        self.cents = cents

    def __format__(self, spec):
        return format("%s%d.%02d" % ("-" if self.cents < 0 else "", *divmod(abs(self.cents), 100)), spec)

    def __str__(self):
        return "EUR %d.%02d" % divmod(self.cents, 100)


def format_row(number, name, qty, price):
    return f"{number:>4} {name:<28.28} {qty:>5} {price:>12} {Money(qty * price.cents):>14}"


def render_table(items):
    lines = [f"{'#':>4} {'item':<28} {'qty':>5} {'price':>12} {'amount':>14}"]
    for number, (name, qty, price) in enumerate(items, 1):
        lines.append(format_row(number, name, qty, price))
    return "\n".join(lines)


def render_totals(net, tax):
    return "{:>48} {:>14}\n{:>48} {:>14}\n{:>48} {:>14}".format(
        "net", net, "tax", tax, "total", Money(net.cents + tax.cents))


def legacy_line(number, total):
    return "%-10s %s" % ("INV-%05d" % number, total)


def render_letter(number, customer, total):
    return LETTER.substitute(name=customer, number="INV-%05d" % number, total=total, due="2026-12-31")


def wrap_notes(width):
    return textwrap.fill(NOTES, width=width, initial_indent="  ", subsequent_indent="  ")


def render_invoice(number, customer, items):
    net = Money(sum(qty * price.cents for _, qty, price in items))
    tax = Money(net.cents * 21 // 100)
    total = Money(net.cents + tax.cents)
    return "\n\n".join([render_letter(number, customer, total), render_table(items),
                        render_totals(net, tax), legacy_line(number, total), wrap_notes(72)])


def main():
    items = [("widget model %d" % i, i % 7 + 1, Money(1999 + 250 * i)) for i in range(24)]
    number = 0
    while True:
        render_invoice(number, "customer-%d" % (number % 53), items)
        number += 1


if __name__ == "__main__":
    main()
