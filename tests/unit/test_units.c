// SPDX-License-Identifier: MIT
/* The size and duration parser both programs' options go through (common/units.c): exact
 * values for every unit, and every refusal with its reason. Built with ASan/UBSan. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "units.h"

#include "check.h"

static void size_is(const char *s, uint64_t plain_unit, uint64_t want)
{
	const char *why = "(unset)";
	uint64_t v = 12345;
	int err = units__size(s, plain_unit, &v, &why);

	CHECK(!err && v == want, "size '%s' (plain unit %" PRIu64 "): err %d (%s), got %" PRIu64 ", want %" PRIu64, s,
	      plain_unit, err, err ? why : "", v, want);
}

/* Refused with ERR, *WHY containing WHY, and the output left alone. */
static void size_refused(const char *s, int err_want, const char *why_want)
{
	const char *why = NULL;
	uint64_t v = 12345;
	int err = units__size(s, 1, &v, &why);

	CHECK(err == err_want && why && strstr(why, why_want) && v == 12345,
	      "size '%s': err %d (want %d), why '%s' (want '%s'), value %" PRIu64, s, err, err_want, why ? why : "(null)",
	      why_want, v);
}

static void duration_is(const char *s, double want)
{
	const char *why = "(unset)";
	double v = -1;
	int err = units__duration(s, &v, &why);

	/* Exact: each expected figure is the double the C compiler makes of the same decimal. */
	CHECK(!err && v == want, "duration '%s': err %d (%s), got %.17g, want %.17g", s, err, err ? why : "", v, want);
}

static void duration_refused(const char *s, int err_want, const char *why_want)
{
	const char *why = NULL;
	double v = -1;
	int err = units__duration(s, &v, &why);

	CHECK(err == err_want && why && strstr(why, why_want) && v == -1,
	      "duration '%s': err %d (want %d), why '%s' (want '%s'), value %g", s, err, err_want, why ? why : "(null)",
	      why_want, v);
}

static void test_sizes(void)
{
	size_is("0", 1, 0);
	size_is("1", 1, 1);
	size_is("4096", 1, 4096);
	size_is("512k", 1, 524288);
	size_is("512K", 1, 524288);
	size_is("1m", 1, 1048576);
	size_is("16M", 1, 16777216);
	size_is("1g", 1, 1073741824);
	size_is("2G", 1, 2147483648u);
	size_is("1024g", 1, 1099511627776ull);
	size_is("1.5k", 1, 1536);
	size_is("1.5m", 1, 1572864);
	size_is("0.25g", 1, 268435456);
	size_is(".5k", 1, 512);
	size_is("2.", 1, 2);
	size_is("2.000", 1, 2);
	size_is("007", 1, 7);
	/* 1/1024 KiB is one byte exactly. */
	size_is("0.0009765625k", 1, 1);
	size_is("18446744073709551615", 1, UINT64_MAX);
	size_is("17179869183g", 1, 17179869183ull << 30); /* the largest whole GiB count that fits */
	/* A plain figure counts the option's own unit (--ringbuf-size: MiB); a suffix still wins. */
	size_is("16", 1u << 20, 16777216);
	size_is("1g", 1u << 20, 1073741824);
	size_is("512k", 1u << 20, 524288);
	size_is("0.5", 1u << 20, 524288);

	size_refused("", -EINVAL, "not a number");
	size_refused("k", -EINVAL, "not a number");
	size_refused(".", -EINVAL, "not a number");
	size_refused("-1", -EINVAL, "not a number");
	size_refused("+1", -EINVAL, "not a number");
	size_refused(" 1", -EINVAL, "not a number");
	size_refused("inf", -EINVAL, "not a number");
	size_refused("nan", -EINVAL, "not a number");
	size_refused("1 ", -EINVAL, "k, m or g");
	size_refused("1kb", -EINVAL, "k, m or g");
	size_refused("1KiB", -EINVAL, "k, m or g");
	size_refused("1t", -EINVAL, "k, m or g");
	size_refused("1e3", -EINVAL, "k, m or g");
	size_refused("0x10", -EINVAL, "k, m or g");
	size_refused("1.2.3", -EINVAL, "k, m or g");
	size_refused("5parsecs", -EINVAL, "k, m or g");
	size_refused("0.5", -EINVAL, "whole number of bytes");
	size_refused("1.0001k", -EINVAL, "whole number of bytes");
	size_refused("0.0000000000000000001", -EINVAL, "18 decimals");
	size_refused("18446744073709551616", -ERANGE, "too large");
	size_refused("99999999999999999999999", -ERANGE, "too large");
	size_refused("17179869184g", -ERANGE, "too large");
	size_refused("18014398509481984k", -ERANGE, "too large");
}

static void test_durations(void)
{
	duration_is("0", 0);
	duration_is("5", 5);
	duration_is("0.2", 0.2);
	duration_is("12.5", 12.5);
	duration_is("5s", 5);
	duration_is("0.5s", 0.5);
	duration_is("500ms", 0.5);
	duration_is("1ms", 0.001);
	duration_is("250ms", 0.25);
	duration_is("1.5ms", 0.0015);
	duration_is("5m", 300);
	duration_is("5min", 300);
	duration_is("1.5m", 90);
	duration_is("1h", 3600);
	duration_is("0.5h", 1800);
	duration_is("24h", 86400);
	duration_is(".5", 0.5);
	duration_is("1000000000000", 1e12); /* the limit itself */
	duration_is("277777777h", 999999997200.0);

	duration_refused("", -EINVAL, "not a number");
	duration_refused("-1", -EINVAL, "not a number");
	duration_refused("-0", -EINVAL, "not a number");
	duration_refused("nan", -EINVAL, "not a number");
	duration_refused("inf", -EINVAL, "not a number");
	duration_refused("infinity", -EINVAL, "not a number");
	duration_refused("s", -EINVAL, "not a number");
	duration_refused("1e3", -EINVAL, "ms, s, m or h");
	duration_refused("0x10", -EINVAL, "ms, s, m or h");
	duration_refused("5parsecs", -EINVAL, "ms, s, m or h");
	duration_refused("5 s", -EINVAL, "ms, s, m or h");
	duration_refused("5sec", -EINVAL, "ms, s, m or h");
	duration_refused("5M", -EINVAL, "ms, s, m or h");
	duration_refused("5d", -EINVAL, "ms, s, m or h");
	duration_refused("1000000000000.5", -ERANGE, "1e12");
	duration_refused("277777778h", -ERANGE, "1e12");
	duration_refused("16666666667m", -ERANGE, "1e12");
	duration_refused("99999999999999999999", -ERANGE, "too large");
}

static void test_percents(void)
{
	const char *why = NULL;
	double v = -1;

	CHECK(!units__percent("5%", &v, &why) && v == 5, "5%%: %g", v);
	CHECK(!units__percent("2.5%", &v, &why) && v == 2.5, "2.5%%: %g", v);
	CHECK(!units__percent("0%", &v, &why) && v == 0, "0%%: %g", v);
	CHECK(!units__percent("150%", &v, &why) && v == 150, "150%%: %g", v);
	v = -1;
	CHECK(units__percent("5", &v, &why) == -EINVAL && strstr(why, "followed by %") && v == -1, "5: %g", v);
	CHECK(units__percent("5%%", &v, &why) == -EINVAL && v == -1, "5%%%%: %g", v);
	CHECK(units__percent("%", &v, &why) == -EINVAL && strstr(why, "not a number"), "%%: %s", why);
	CHECK(units__percent("-5%", &v, &why) == -EINVAL && strstr(why, "not a number"), "-5%%: %s", why);
	CHECK(units__percent("nan%", &v, &why) == -EINVAL && strstr(why, "not a number"), "nan%%: %s", why);
}

int main(void)
{
	test_sizes();
	test_durations();
	test_percents();
	printf("test_units: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
