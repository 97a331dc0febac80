"""The benches' one interval: a mean and the half-width of its 95%
Student-t interval, shared so every row of `make bench` is computed alike."""
import math

T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
        10: 2.23, 15: 2.13, 20: 2.09, 30: 2.04}


def mean_ci(xs):
    """Mean and the half-width of its 95% interval (Student t), None if n < 2.
    None entries (a run that gave no figure) are left out."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return m, None
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    df = len(xs) - 1
    t = T975.get(df) or T975[max(k for k in T975 if k <= df)]
    return m, t * sd / math.sqrt(len(xs))
