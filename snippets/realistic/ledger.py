"""ledger: loan schedules and invoices in decimal arithmetic, as a billing back end would compute them.

Written like ordinary code, without the oracle's instrumentation. The
arithmetic is the C decimal module's (quantize, powers, a local context):
it runs no Python frame, so the frames are only this file's.
"""
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, localcontext

CENT = Decimal("0.01")
RATES = [Decimal("0.0349"), Decimal("0.0475"), Decimal("0.0599"), Decimal("0.1125")]


def monthly_payment(principal, annual_rate, months):
    r = annual_rate / 12
    return (principal * r / (1 - (1 + r) ** -months)).quantize(CENT, ROUND_HALF_UP)


def amortize(principal, annual_rate, months):
    payment = monthly_payment(principal, annual_rate, months)
    balance, rows = principal, []
    for month in range(1, months + 1):
        interest = (balance * annual_rate / 12).quantize(CENT, ROUND_HALF_EVEN)
        capital = balance if month == months else min(payment - interest, balance)
        balance -= capital
        rows.append((month, interest, capital, balance))
    return rows


def line_amount(qty, price, discount):
    gross = qty * price
    return (gross - gross * discount).quantize(CENT, ROUND_HALF_EVEN)


def invoice_total(lines, tax_rate):
    with localcontext() as ctx:
        ctx.prec = 34
        net = sum((line_amount(qty, price, discount) for qty, price, discount in lines), Decimal(0))
        tax = (net * tax_rate).quantize(CENT, ROUND_HALF_UP)
    return net + tax


def money(amount):
    return format(amount, ",.2f")


def statement(rows):
    return "\n".join("%3d %12s %12s %14s" % (month, money(interest), money(capital), money(balance))
                     for month, interest, capital, balance in rows)


def main():
    lines = [(Decimal(q), Decimal(p), Decimal(d)) for q, p, d in
             [(3, "19.99", "0"), (1, "249.00", "0.1"), (12, "0.35", "0"), (2, "74.50", "0.05")] * 10]
    while True:
        for rate in RATES:
            statement(amortize(Decimal("250000"), rate, 360))
            for _ in range(30):
                invoice_total(lines, Decimal("0.21"))


if __name__ == "__main__":
    main()
