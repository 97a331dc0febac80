# Busy in C for tests/integration/test_native_unwind.sh: nearly all CPU time
# is inside OpenSSL's PBKDF2 (libcrypto, through _hashlib), called from one
# Python frame, so a native stack from the interrupted function down to
# main is what every sample should show. With "faults", touches fresh pages
# instead (time in the kernel's page-fault path: --kernel frames on top).
# With "late GOFILE", loads libcrypto only once GOFILE exists (a library
# mapped after recording began: the tables must be refreshed). With
# "ctypes LIB", spins in LIB's nofp_spin (a library built without CFI).
import mmap
import sys


def faults():
    while True:
        m = mmap.mmap(-1, 64 << 20)
        for off in range(0, len(m), 4096):
            m[off] = 1
        m.close()


def main():
    print("ready", flush=True)
    if sys.argv[1:2] == ["faults"]:
        faults()
    if sys.argv[1:2] == ["late"]:
        # Spin in Python until the test says go, then load libcrypto
        # (dlopen of _hashlib's dependencies) and burn CPU there.
        go = sys.argv[2]
        while True:
            try:
                open(go).close()
                break
            except OSError:
                sum(range(10000))
        import hashlib as h
        while True:
            h.pbkdf2_hmac("sha256", b"password", b"salt", 100000)
    if sys.argv[1:2] == ["ctypes"]:
        import ctypes
        lib = ctypes.CDLL(sys.argv[2])
        lib.nofp_spin.argtypes = [ctypes.c_long]
        while True:
            lib.nofp_spin(10000000)
    import hashlib as h
    while True:
        h.pbkdf2_hmac("sha256", b"password", b"salt", 100000)


main()
