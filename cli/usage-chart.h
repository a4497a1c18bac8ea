/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The daily usage chart of `corral usage --plot` (the terminal) and `--svg` (a file a
 * browser shows): one bar per day, pure formatting of the numbers given, so both are
 * unit-tested (tests/unit/test-usage-chart.c). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct UsageSeries {
        char (*days)[11];       /* "YYYY-MM-DD", consecutive */
        double *values;
        size_t n;
} UsageSeries;

void usage_series_done(UsageSeries *s);
/* Every day from since to until (inclusive, UTC) with 0; -EINVAL when until precedes
 * since or they are not days, -E2BIG past 20 years. */
int usage_series_days(UsageSeries *s, const char *since, const char *until);
/* Adds value to day's bar; -ENOENT for a day outside the series. */
int usage_series_add(UsageSeries *s, const char *day, double value);

/* Bars of height rows (eighths of a cell with utf8, '#' without) at most width columns
 * wide: with more days than columns, consecutive days share a column (summed). */
int usage_chart_text(FILE *f, const UsageSeries *s, const char *title, const char *unit, unsigned width,
                     unsigned height, bool utf8);
/* The same as a standalone SVG document; title and unit are escaped. */
int usage_chart_svg(FILE *f, const UsageSeries *s, const char *title, const char *unit);

/* A number with three significant digits at most, for axes: "0", "1.25", "12.5", "1250". */
char *format_axis_value(char *buf, size_t size, double v);
