"""tokenizer: a regular-expression tokenizer for a small expression language, feeding a shunting-yard evaluator.

Written like ordinary code, without the oracle's instrumentation.
"""
import re

TOKEN = re.compile(r"\s*(?:(\d+\.?\d*)|(\w+)|(.))")
PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def tokenize(text):
    for number, name, op in TOKEN.findall(text):
        if number:
            yield ("num", float(number))
        elif name:
            yield ("name", name)
        elif op.strip():
            yield ("op", op)


def to_rpn(tokens):
    out, ops = [], []
    for kind, value in tokens:
        if kind in ("num", "name"):
            out.append((kind, value))
        elif value == "(":
            ops.append(value)
        elif value == ")":
            while ops and ops[-1] != "(":
                out.append(("op", ops.pop()))
            ops.pop()
        else:
            while ops and ops[-1] != "(" and PRECEDENCE[ops[-1]] >= PRECEDENCE[value]:
                out.append(("op", ops.pop()))
            ops.append(value)
    while ops:
        out.append(("op", ops.pop()))
    return out


def evaluate(rpn, env):
    stack = []
    for kind, value in rpn:
        if kind == "num":
            stack.append(value)
        elif kind == "name":
            stack.append(env[value])
        else:
            b, a = stack.pop(), stack.pop()
            stack.append(a + b if value == "+" else a - b if value == "-" else a * b if value == "*" else a / b)
    return stack[0]


def main():
    source = "(x + 3.5) * (y - 2) / (1 + x * y) + 42 * (x - y)"
    while True:
        for i in range(1, 50):
            evaluate(to_rpn(tokenize(source)), {"x": i, "y": i + 1.0})


if __name__ == "__main__":
    main()
