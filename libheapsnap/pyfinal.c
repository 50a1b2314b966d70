// SPDX-License-Identifier: MIT
/* The snapshot as the interpreter begins to finalize.
 * Py_FinalizeEx first joins the program's threads, then runs the atexit module's callbacks,
 * and only later clears the modules (their globals freed): a callback of ours there marks the
 * moment the program's own work is done and what it keeps is still held, a mark in the main
 * thread's ring that the recorder makes the SNAPSHOT "python-finalize" where it reads it, every
 * event stamped before it read first. (Py_AtExit's functions run after the modules were
 * cleared: too late.) Registered at the install's pending call (pymem.c), so launched before the
 * program registers its own, which atexit then runs before ours (last in, first out); given
 * back at the restore. A fork child inherits the registration and marks its own pid. The
 * callback runs Python's way (the GIL held, from the eval loop), not on a hook's path. */
#include "libheapsnap.h"
#include "python.h"

static void *final_ours; /* the function, a reference held while registered */

static void *final_call(void *self, void *unused)
{
	struct tstate *t = enter();

	(void)self;
	(void)unused;
	if (t) {
		depth_in();
		emit_mark(t, HS_MARK_PY_FINALIZE);
		depth_out();
	}
	py.incref(py.none);
	return py.none;
}

static struct py_method_def final_def = {
	"_heapsnap_finalizing", final_call, PY_METH_NOARGS,
	"heapsnap: marks a snapshot as the interpreter begins to finalize (registered with atexit).",
};

static bool final_api(void)
{
	return py.import_module && py.call_args && py.none && py.cfunction_new && py.get_attr && py.incref &&
	       py.decref && py.err_clear;
}

/* atexit.NAME(final_ours); whether it returned. */
static bool final_atexit(const char *name)
{
	void *mod = py.import_module("atexit"), *fn = mod ? py.get_attr(mod, name) : NULL;
	void *res = fn ? py.call_args(fn, final_ours, NULL) : NULL;

	if (res)
		py.decref(res);
	else
		py.err_clear();
	if (fn)
		py.decref(fn);
	if (mod)
		py.decref(mod);
	return res != NULL;
}

/* Pending call: our callback registered with atexit, once. */
void pyfinal_take(void)
{
	if (final_ours || !final_api())
		return;
	final_ours = py.cfunction_new(&final_def, NULL, NULL);
	if (!final_ours) {
		py.err_clear();
		return;
	}
	if (!final_atexit("register")) {
		py.decref(final_ours);
		final_ours = NULL;
	}
}

/* Pending call: unregistered (a later session registers it again). */
void pyfinal_give_back(void)
{
	if (!final_ours)
		return;
	final_atexit("unregister");
	py.decref(final_ours);
	final_ours = NULL;
}
