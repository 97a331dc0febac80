// SPDX-License-Identifier: MIT
/*
 * A C extension for test_native.sh, built by the test against each target's
 * own headers. burnmod.spin(callback, rounds, c_iters) calls callback() (a
 * Python function: frames above C) and burns CPU in burn_loop() (C, no
 * Python frame) in turns, and measures burn_loop's own thread CPU time,
 * which burnmod.c_ns() returns: the share of samples that burn_loop must
 * hold. Built with -O2 and without frame pointers, as distributions build
 * extensions: the unwind must come from CFI.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <time.h>

static unsigned long long c_ns_total;

static unsigned long long thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

__attribute__((noinline)) static unsigned long burn_loop(unsigned long n)
{
	volatile unsigned long x = 0;

	for (unsigned long i = 0; i < n; i++)
		x += i ^ (x >> 3);
	return x;
}

static PyObject *spin(PyObject *self, PyObject *args)
{
	PyObject *cb;
	unsigned long rounds, iters, sink = 0;

	(void)self;
	if (!PyArg_ParseTuple(args, "Okk", &cb, &rounds, &iters))
		return NULL;
	for (unsigned long r = 0; r < rounds; r++) {
		PyObject *res = PyObject_CallObject(cb, NULL);
		unsigned long long t0;

		if (!res)
			return NULL;
		Py_DECREF(res);
		t0 = thread_ns();
		sink += burn_loop(iters);
		c_ns_total += thread_ns() - t0;
	}
	return PyLong_FromUnsignedLong(sink);
}

static PyObject *c_ns(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return PyLong_FromUnsignedLongLong(c_ns_total);
}

static PyMethodDef methods[] = {
    {"spin", spin, METH_VARARGS, "spin(callback, rounds, c_iters)"},
    {"c_ns", c_ns, METH_NOARGS, "CPU ns spent in burn_loop"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef mod = {
    PyModuleDef_HEAD_INIT, "burnmod", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_burnmod(void)
{
	return PyModule_Create(&mod);
}
