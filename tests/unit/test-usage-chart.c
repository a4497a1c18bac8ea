/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral usage's chart: the days of a period, bars in the terminal, an SVG document that
 * an XML parser accepts (python3's, when there is one), with its text escaped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/usage-chart.h"
#include "macro.h"

static char *render(int (*fn)(FILE *, const UsageSeries *, void *), const UsageSeries *s, void *arg) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        assert_int_equal(fn(f, s, arg), 0);
        assert_int_equal(fclose(f), 0);
        return buf;
}

static int text_ascii(FILE *f, const UsageSeries *s, void *arg) {
        return usage_chart_text(f, s, "title", "core-hours", *(unsigned *) arg, 5, false);
}

static int text_utf8(FILE *f, const UsageSeries *s, void *arg) {
        return usage_chart_text(f, s, "title", "core-hours", *(unsigned *) arg, 5, true);
}

static int svg(FILE *f, const UsageSeries *s, void *arg) {
        return usage_chart_svg(f, s, arg, "core-hours");
}

static size_t count(const char *text, const char *what) {
        size_t n = 0;
        for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
                n++;
        return n;
}

static void test_series(void **state) {
        UsageSeries s = {};

        assert_int_equal(usage_series_days(&s, "2024-02-27", "2024-03-02"), 0);
        assert_int_equal(s.n, 5); /* a leap year */
        assert_string_equal(s.days[2], "2024-02-29");
        assert_string_equal(s.days[4], "2024-03-02");
        assert_int_equal(usage_series_add(&s, "2024-02-29", 1.5), 0);
        assert_int_equal(usage_series_add(&s, "2024-02-29", 1.0), 0);
        assert_true(s.values[2] == 2.5);
        assert_int_equal(usage_series_add(&s, "2024-03-03", 1.0), -ENOENT);
        assert_int_equal(usage_series_add(&s, "2024-02-26", 1.0), -ENOENT);
        usage_series_done(&s);
        assert_int_equal(usage_series_days(&s, "2024-03-02", "2024-03-01"), -EINVAL);
        assert_int_equal(usage_series_days(&s, "2024-3-1", "2024-03-01"), -EINVAL);
        assert_int_equal(usage_series_days(&s, "1990-01-01", "2024-03-01"), -E2BIG);
}

static void test_text(void **state) {
        UsageSeries s = {};
        unsigned width = 80;
        char *out;

        assert_int_equal(usage_series_days(&s, "2024-06-01", "2024-06-30"), 0);
        s.values[0] = 10;
        s.values[29] = 5;
        s.values[14] = 0.001; /* tiny, still visible */
        out = render(text_ascii, &s, &width);
        /* 5 rows of bars, the axis, the days, the legend. */
        assert_int_equal(count(out, "\n"), 1 + 5 + 1 + 1 + 1);
        assert_non_null(strstr(out, "      10 +"));
        assert_non_null(strstr(out, "2024-06-01"));
        assert_non_null(strstr(out, "2024-06-30"));
        /* The first day's bar fills every row; the last day's half of them. */
        assert_int_equal(count(out, "# "), 5 + 3);
        free(out);
        out = render(text_utf8, &s, &width);
        assert_non_null(strstr(out, "█"));
        assert_non_null(strstr(out, "▁")); /* the tiny day */
        free(out);

        /* More days than columns: days share a column, and the legend says how many. */
        usage_series_done(&s);
        assert_int_equal(usage_series_days(&s, "2024-01-01", "2024-12-31"), 0);
        width = 60;
        out = render(text_ascii, &s, &width);
        assert_non_null(strstr(out, "one column: 8 days"));
        for (char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                assert_true((size_t) (strchrnul(l, '\n') - l) <= 60);
        free(out);
        usage_series_done(&s);
}

static void test_svg(void **state) {
        UsageSeries s = {};
        char *out;
        FILE *py;

        assert_int_equal(usage_series_days(&s, "2024-06-01", "2024-06-07"), 0);
        s.values[3] = 2.25;
        out = render(svg, &s, (void *) "<usage> & \"more\"");
        assert_true(strncmp(out, "<?xml version=\"1.0\"", 19) == 0);
        assert_int_equal(count(out, "fill=\"#4e79a7\""), 7);
        assert_non_null(strstr(out, "&lt;usage&gt; &amp; &quot;more&quot;"));
        assert_null(strstr(out, "<usage>"));
        assert_non_null(strstr(out, "<title>2024-06-04: 2.25 core-hours</title>"));
        assert_non_null(strstr(out, "</svg>\n"));
        /* A real XML parser, when there is one. */
        py = popen("command -v python3 >/dev/null && exec python3 -c 'import sys, xml.etree.ElementTree as E; "
                   "r = E.fromstring(sys.stdin.read()); sys.exit(0 if r.tag.endswith(\"svg\") else 1)' || "
                   "cat >/dev/null",
                   "w");
        assert_non_null(py);
        fputs(out, py);
        assert_int_equal(pclose(py), 0);
        free(out);

        /* Nothing used: still a document, no division by zero. */
        s.values[3] = 0;
        out = render(svg, &s, (void *) "empty");
        assert_non_null(strstr(out, "height=\"0.0\""));
        free(out);
        usage_series_done(&s);
}

static void test_axis_values(void **state) {
        char b[32];

        assert_string_equal(format_axis_value(b, sizeof b, 0), "0");
        assert_string_equal(format_axis_value(b, sizeof b, 1.5), "1.5");
        assert_string_equal(format_axis_value(b, sizeof b, 12.54), "12.5");
        assert_string_equal(format_axis_value(b, sizeof b, 1250.4), "1250");
        assert_string_equal(format_axis_value(b, sizeof b, 0.0012), "0.0012");
        assert_string_equal(format_axis_value(b, sizeof b, 2.0), "2");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_series),
                cmocka_unit_test(test_text),
                cmocka_unit_test(test_svg),
                cmocka_unit_test(test_axis_values),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
