"""worker_pool: a pool of four worker threads taking jobs from a queue and putting results on another.

Written like ordinary code, without the oracle's instrumentation; the
workers' stacks are rooted in threading.py, the producer's in this file.
"""
import queue
import threading


def checksum(data):
    h = 0
    for b in data:
        h = (h * 31 + b) & 0xFFFFFFFF
    return h


def worker(jobs, results):
    while True:
        data = jobs.get()
        results.put(checksum(data))


def produce(jobs, results):
    payload = bytes(range(256)) * 8
    while True:
        for _ in range(16):
            jobs.put(payload)
        for _ in range(16):
            results.get()


def main():
    jobs, results = queue.Queue(), queue.Queue()
    for i in range(4):
        threading.Thread(target=worker, args=(jobs, results), name="worker-%d" % i, daemon=True).start()
    produce(jobs, results)


if __name__ == "__main__":
    main()
