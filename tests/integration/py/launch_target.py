# Run by test_launch.sh / test_convert.sh under `bpfpy record -- ...`:
#   launch_target.py [exit N | signal | child]
# launch_first() runs first thing, for a short burst of CPU: a profile that
# shows it was sampled from the interpreter's start. Then launch_hot() for a
# while; "child" runs a second Python (child_hot) in between; at the end the
# process exits with N, or kills itself with SIGTERM (bpfpy: 128+15).
import os
import signal
import subprocess
import sys
import time


def burn(seconds):
    t = time.process_time() + seconds
    n = 0
    while time.process_time() < t:
        n += 1
    return n


def launch_first():
    return burn(0.15)


def launch_hot():
    return burn(0.3)


launch_first()
launch_hot()
args = sys.argv[1:]
if args[:1] == ["child"]:
    code = "import time\ndef child_hot():\n    t = time.process_time() + 0.4\n    while time.process_time() < t: pass\nchild_hot()\n"
    subprocess.run([sys.executable, "-c", code], check=True)
if args[:1] == ["signal"]:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
sys.exit(int(args[1]) if args[:1] == ["exit"] else 0)
