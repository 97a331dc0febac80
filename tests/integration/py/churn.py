# Thread churn (issue 28): a program whose threads live for one request.
#
#   churn.py server SECONDS   http.server.ThreadingHTTPServer (one thread
#                             per request, HTTP/1.0: one request per
#                             connection) on 127.0.0.1, loaded for SECONDS
#                             by a client process of its own (churn.py
#                             client PORT SECONDS, not sampled)
#   churn.py futures SECONDS  short-lived concurrent.futures executors: a
#                             ThreadPoolExecutor of 4 workers per batch of 8
#                             tasks, shut down (its threads end) after each
#
#   churn.py steady SECONDS   the same tasks on one executor for the whole
#                             run (its 4 threads live throughout), and
#   churn.py pool SECONDS     the same server with its requests handled by
#                             4 threads that live throughout: the steady
#                             shapes beside the churn, for make bench
#
# The work of a request or task is handle_work(): JSON decoding, hashing,
# JSON encoding. It measures its own CPU time (time.thread_time) and the
# program its whole CPU time (time.process_time) at the end, so that a
# sampler's share of samples in handle_work can be held to the share of
# CPU it measured. Every thread notes when its body ended (thread_done:
# its tid and time.monotonic_ns(), the clock of bpfpy's sample times),
# after which no sample of it can show its body's frames. Prints "ready" once serving (or once started),
# then at the end one line "stats {json}": mode, requests (the program's
# own count of requests or tasks done), work_s, cpu_s, threads (threads
# started), and one line "end TID NS" per thread that ended.
import concurrent.futures
import hashlib
import http.client
import http.server
import json
import subprocess
import sys
import threading
import time

PAYLOAD = json.dumps({"items": [{"id": i, "name": "item-%d" % i, "tags": ["a", "b", "c"],
                                 "price": i * 1.25} for i in range(40)]}).encode()
ROUNDS = 6
lock = threading.Lock()
totals = {"requests": 0, "work_s": 0.0, "threads": 0}
ends = []
_bootstrap = threading.Thread._bootstrap


def thread_done(self):
    try:
        _bootstrap(self)
    finally:
        ends.append((threading.get_native_id(), time.monotonic_ns()))


threading.Thread._bootstrap = thread_done


def handle_work(body):
    t0 = time.thread_time()
    doc = json.loads(body)
    h = hashlib.sha256()
    for _ in range(ROUNDS):
        h.update(json.dumps(doc, sort_keys=True).encode())
        h = hashlib.sha256(h.digest() * 64)
    out = json.dumps({"digest": h.hexdigest(), "n": len(doc["items"])}).encode()
    dt = time.thread_time() - t0
    with lock:
        totals["requests"] += 1
        totals["work_s"] += dt
    return out


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        out = handle_work(self.rfile.read(n))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def client(port, seconds, conns=3):
    end = time.monotonic() + seconds

    def loop():
        while time.monotonic() < end:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                c.request("POST", "/", body=PAYLOAD)
                c.getresponse().read()
                c.close()
            except OSError:
                time.sleep(0.01)

    ts = [threading.Thread(target=loop) for _ in range(conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


class Server(http.server.ThreadingHTTPServer):
    def process_request(self, request, client_address):
        totals["threads"] += 1  # one thread per request: ThreadingMixIn's
        super().process_request(request, client_address)


class PoolServer(http.server.HTTPServer):
    """Requests handled by a pool of threads that live as long as it."""

    def __init__(self, *args):
        super().__init__(*args)
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)

    def process_request(self, request, client_address):
        self.pool.submit(self.handle_one, request, client_address)

    def handle_one(self, request, client_address):
        try:
            self.finish_request(request, client_address)
        finally:
            self.shutdown_request(request)


def server(seconds, pool=False):
    srv = (PoolServer if pool else Server)(("127.0.0.1", 0), Handler)
    port = srv.server_address[1]
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    print("ready", flush=True)
    cl = subprocess.Popen([sys.executable, __file__, "client", str(port), str(seconds)])
    cl.wait()
    srv.shutdown()
    srv.server_close()
    if pool:
        totals["threads"] = len(srv.pool._threads)
        srv.pool.shutdown(wait=True)


def task(i):
    return handle_work(PAYLOAD)


def futures(seconds, steady=False):
    print("ready", flush=True)
    end = time.monotonic() + seconds
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=4) if steady else None
    while time.monotonic() < end:
        ex = pool or concurrent.futures.ThreadPoolExecutor(max_workers=4)
        list(ex.map(task, range(8)))
        if not steady:
            totals["threads"] += len(ex._threads)
            ex.shutdown(wait=True)  # its threads end
    if pool:
        totals["threads"] = len(pool._threads)
        pool.shutdown(wait=True)


def main():
    mode = sys.argv[1]
    if mode == "client":
        client(int(sys.argv[2]), float(sys.argv[3]))
        return
    seconds = float(sys.argv[2])
    if mode in ("server", "pool"):
        server(seconds, pool=mode == "pool")
    else:
        futures(seconds, steady=mode == "steady")
    stats = dict(totals, mode=mode, cpu_s=time.process_time())
    print("stats " + json.dumps(stats), flush=True)
    print("".join("end %d %d\n" % e for e in list(ends)), end="", flush=True)


main()
