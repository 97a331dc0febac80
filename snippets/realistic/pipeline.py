"""pipeline: a log-processing job streaming records through a pipeline of generators (read, parse, filter, enrich, batch, summarise).

Written like ordinary code, without the oracle's instrumentation. Each
stage is a generator pulling from the one before it, so while a record is
being produced the stages' frames are stacked in pipeline order, each on
the frame that resumed it; the percentile pass feeds the same stages to
sorted() through a generator expression.
"""
import random

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
SERVICES = ("auth", "billing", "search", "storage")


def make_log(n, seed):
    rng = random.Random(seed)
    return [
        "%d %s %s latency=%d user=%d\n"
        % (1700000000 + i, rng.choice(LEVELS), rng.choice(SERVICES), rng.randint(1, 900), rng.randint(1, 50))
        for i in range(n)
    ]


def read_lines(lines):
    for line in lines:
        yield line.rstrip("\n")


def parse(lines):
    for line in lines:
        stamp, level, service, *fields = line.split()
        record = {"ts": int(stamp), "level": level, "service": service}
        for field in fields:
            key, _, value = field.partition("=")
            record[key] = int(value)
        yield record


def only_levels(records, levels):
    for record in records:
        if record["level"] in levels:
            yield record


def enrich(records):
    for record in records:
        record["slow"] = record["latency"] > 500
        record["minute"] = record["ts"] // 60
        yield record


def batches(records, size):
    batch = []
    for record in records:
        batch.append(record)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def summarise(groups):
    totals = {}
    for batch in groups:
        for record in batch:
            seen = totals.setdefault(record["service"], [0, 0])
            seen[0] += 1
            seen[1] += record["slow"]
    return totals


def stream(lines):
    return enrich(only_levels(parse(read_lines(lines)), {"WARNING", "ERROR"}))


def run(lines):
    totals = summarise(batches(stream(lines), 64))
    latencies = sorted(record["latency"] for record in stream(lines))
    return totals, latencies[len(latencies) * 99 // 100]


def main():
    lines = make_log(2000, 7)
    while True:
        run(lines)


if __name__ == "__main__":
    main()
