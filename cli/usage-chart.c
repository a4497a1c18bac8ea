/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "usage-chart.h"

#define DAY_SEC 86400
#define SERIES_DAYS_MAX (20 * 366)

void usage_series_done(UsageSeries *s) {
        s->days = mfree(s->days);
        s->values = mfree(s->values);
        s->n = 0;
}

static int parse_day(const char *s, time_t *ret) {
        struct tm tm = {};
        const char *end;

        if (!s || strlen(s) != 10)
                return -EINVAL;
        end = strptime(s, "%Y-%m-%d", &tm);
        if (!end || *end)
                return -EINVAL;
        *ret = timegm(&tm);
        return *ret < 0 ? -EINVAL : 0;
}

int usage_series_days(UsageSeries *s, const char *since, const char *until) {
        time_t a, b;
        size_t n;

        if (parse_day(since, &a) < 0 || parse_day(until, &b) < 0 || b < a)
                return -EINVAL;
        n = (size_t) ((b - a) / DAY_SEC) + 1;
        if (n > SERIES_DAYS_MAX)
                return -E2BIG;
        s->days = calloc(n, sizeof *s->days);
        s->values = new0(double, n);
        if (!s->days || !s->values) {
                usage_series_done(s);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                time_t t = a + (time_t) i * DAY_SEC;
                struct tm tm;
                gmtime_r(&t, &tm);
                strftime(s->days[i], sizeof s->days[i], "%Y-%m-%d", &tm);
        }
        s->n = n;
        return 0;
}

int usage_series_add(UsageSeries *s, const char *day, double value) {
        time_t first, t;
        size_t i;

        if (s->n == 0 || parse_day(s->days[0], &first) < 0 || parse_day(day, &t) < 0 || t < first)
                return -ENOENT;
        i = (size_t) ((t - first) / DAY_SEC);
        if (i >= s->n)
                return -ENOENT;
        s->values[i] += value;
        return 0;
}

char *format_axis_value(char *buf, size_t size, double v) {
        if (!(v > 0) || !isfinite(v))
                snprintf(buf, size, "0");
        else if (v >= 100)
                snprintf(buf, size, "%.0f", v);
        else if (v >= 10)
                snprintf(buf, size, "%.1f", v);
        else if (v >= 0.01)
                snprintf(buf, size, "%.2f", v);
        else
                snprintf(buf, size, "%.2g", v);
        /* "1.50" reads as "1.5". */
        if (strchr(buf, '.') && !strchr(buf, 'e')) {
                char *e = buf + strlen(buf) - 1;
                while (*e == '0')
                        *e-- = 0;
                if (*e == '.')
                        *e = 0;
        }
        return buf;
}

static void put_n(FILE *f, const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                fputs(s, f);
}

int usage_chart_text(FILE *f, const UsageSeries *s, const char *title, const char *unit, unsigned width,
                     unsigned height, bool utf8) {
        static const char *const blocks[] = { " ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };
        _cleanup_free_ double *cols = NULL;
        char top[32], mid[32];
        size_t label_w, avail, per, ncols, cw;
        double max = 0;

        if (s->n == 0 || height == 0)
                return -EINVAL;
        format_axis_value(top, sizeof top, 0);
        /* Columns: as many days per column as it takes to fit. */
        label_w = 8;
        avail = width > label_w + 4 ? width - label_w - 2 : 1;
        per = (s->n + avail - 1) / avail;
        ncols = (s->n + per - 1) / per;
        cols = new0(double, ncols);
        if (!cols)
                return -ENOMEM;
        for (size_t i = 0; i < s->n; i++)
                cols[i / per] += s->values[i];
        for (size_t i = 0; i < ncols; i++)
                max = MAX(max, cols[i]);
        cw = MAX(MIN(avail / ncols, (size_t) 3), (size_t) 1);

        fprintf(f, "%s\n", title);
        format_axis_value(top, sizeof top, max);
        format_axis_value(mid, sizeof mid, max / 2);
        for (unsigned row = 0; row < height; row++) {
                unsigned base = (height - 1 - row) * 8;
                bool labelled = row == 0 || (height > 2 && row == height / 2);

                fprintf(f, "%*s %s", (int) label_w, row == 0 ? top : labelled ? mid : "",
                        labelled ? (utf8 ? "┤" : "+") : (utf8 ? "│" : "|"));
                for (size_t c = 0; c < ncols; c++) {
                        /* Rounded to nearest; never negative. (Not lround(): that alone would
                         * make every corral command load libm at its start.) */
                        unsigned units = max > 0 ? (unsigned) (cols[c] / max * height * 8 + 0.5) : 0, cell;
                        const char *glyph;

                        /* Something used, however little, shows as the lowest bar. */
                        if (units == 0 && cols[c] > 0)
                                units = 1;
                        cell = units > base ? MIN(units - base, 8u) : 0;
                        glyph = utf8 ? blocks[cell] : cell >= 4 ? "#" : " ";
                        put_n(f, glyph, cw > 1 ? cw - 1 : 1);
                        if (cw > 1)
                                fputc(' ', f);
                }
                fputc('\n', f);
        }
        fprintf(f, "%*s %s", (int) label_w, "0", utf8 ? "└" : "+");
        put_n(f, utf8 ? "─" : "-", ncols * cw);
        fputc('\n', f);
        /* The first and last day under the axis, when there is room for both. */
        fprintf(f, "%*s  %s", (int) label_w, "", s->days[0]);
        if (ncols * cw >= 22)
                fprintf(f, "%*s", (int) (ncols * cw - 10), s->days[s->n - 1]);
        fputc('\n', f);
        if (per > 1)
                fprintf(f, "%*s  (one column: %zu days; %s)\n", (int) label_w, "", per, unit);
        else
                fprintf(f, "%*s  (%s per day)\n", (int) label_w, "", unit);
        return ferror(f) ? -EIO : 0;
}

static void put_xml(FILE *f, const char *s) {
        for (; s && *s; s++)
                switch (*s) {
                case '<':
                        fputs("&lt;", f);
                        break;
                case '>':
                        fputs("&gt;", f);
                        break;
                case '&':
                        fputs("&amp;", f);
                        break;
                case '"':
                        fputs("&quot;", f);
                        break;
                default:
                        /* Control characters are not XML, not even escaped. */
                        if ((unsigned char) *s >= 0x20 || *s == '\n' || *s == '\t')
                                fputc(*s, f);
                }
}

int usage_chart_svg(FILE *f, const UsageSeries *s, const char *title, const char *unit) {
        const double left = 70, right = 20, top = 40, bottom = 50, plot_h = 240;
        double bw, plot_w, max = 0, width, height;
        char buf[32];

        if (s->n == 0)
                return -EINVAL;
        for (size_t i = 0; i < s->n; i++)
                max = MAX(max, s->values[i]);
        bw = MAX(MIN(600.0 / (double) s->n, 24.0), 2.0);
        plot_w = bw * (double) s->n;
        width = MAX(left + plot_w + right, 400.0);
        height = top + plot_h + bottom;

        fprintf(f,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\""
                " font-family=\"sans-serif\" font-size=\"12\">\n",
                width, height, width, height);
        fputs("<title>", f);
        put_xml(f, title);
        fputs("</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n", f);
        fprintf(f, "<text x=\"%.0f\" y=\"24\" font-size=\"15\">", left);
        put_xml(f, title);
        fputs("</text>\n", f);

        /* Grid and y axis: 0, half, the top. */
        for (int k = 0; k <= 2; k++) {
                double v = max * k / 2, y = top + plot_h - plot_h * k / 2;
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", left, y,
                        left + plot_w, y, k == 0 ? "black" : "#dddddd");
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left - 6, y + 4,
                        format_axis_value(buf, sizeof buf, v));
                if (max == 0)
                        break;
        }
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", left, top, left,
                top + plot_h);

        for (size_t i = 0; i < s->n; i++) {
                double h = max > 0 ? plot_h * s->values[i] / max : 0;
                fprintf(f,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#4e79a7\">"
                        "<title>%s: %s ",
                        left + bw * (double) i + (bw > 4 ? 1 : 0), top + plot_h - h, bw > 4 ? bw - 2 : bw, h,
                        s->days[i], format_axis_value(buf, sizeof buf, s->values[i]));
                put_xml(f, unit);
                fputs("</title></rect>\n", f);
        }
        /* Days under the axis: the first, the middle and the last. */
        {
                size_t marks[] = { 0, s->n / 2, s->n - 1 };
                for (size_t k = 0; k < ELEMENTSOF(marks); k++) {
                        if (k > 0 && marks[k] == marks[k - 1])
                                continue;
                        if (k == 1 && s->n < 5)
                                continue;
                        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                                left + bw * ((double) marks[k] + 0.5), top + plot_h + 18, s->days[marks[k]]);
                }
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", left + plot_w / 2, top + plot_h + 40);
        put_xml(f, unit);
        fputs(" per day</text>\n</svg>\n", f);
        return ferror(f) ? -EIO : 0;
}
