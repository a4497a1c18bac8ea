/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral usage (sreport's summaries: by user, project, queue or day, as a table, JSON,
 * CSV, a terminal chart or an SVG). */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "fd-util.h"
#include "job-efficiency.h"
#include "json-util.h"
#include "log.h"
#include "parse-util.h"
#include "table.h"
#include "usage-chart.h"

#define DEFAULT_DAYS 30

/* ---- corral usage ---- */

static void today_plus(char out[static 11], int days) {
        time_t t = time(NULL) + (time_t) days * 86400;
        struct tm tm;

        gmtime_r(&t, &tm);
        strftime(out, 11, "%Y-%m-%d", &tm);
}

/* YYYY-MM-DD, today, yesterday, or N days ago as "Nd" (UTC, as corrald counts days). */
static int parse_day_arg(const char *s, char out[static 11]) {
        struct tm tm = {};
        const char *end;
        char *e;
        unsigned long n;

        if (streq(s, "today"))
                today_plus(out, 0);
        else if (streq(s, "yesterday"))
                today_plus(out, -1);
        else if (s[0] >= '0' && s[0] <= '9' && (n = strtoul(s, &e, 10), streq(e, "d")) && n <= 100000)
                today_plus(out, -(int) n);
        else {
                end = strptime(s, "%Y-%m-%d", &tm);
                if (strlen(s) != 10 || !end || *end)
                        return -EINVAL;
                snprintf(out, 11, "%s", s);
        }
        return 0;
}

static void usage_help(void) {
        printf("Usage: corral usage [OPTIONS]\n\n"
               "Report usage as sreport does: jobs, allocated core-hours, service units (core-hours\n"
               "times the queue's charge factor), used CPU hours, efficiency, memory peak, io and\n"
               "stall times, GPU-hours held and used (held times the GPUs' mean utilisation, where\n"
               "GPU telemetry read them) and GPU efficiency, summed by user, project, queue or day.\n"
               "Runs count on the day they ended (UTC). You see your own usage and your projects';\n"
               "administrators see all. With --job, one job's efficiency as Slurm's seff prints it.\n\n"
               "Options:\n"
               "  -S, --since DAY    first day: YYYY-MM-DD, today, yesterday or Nd (N days ago),\n"
               "                     or all (default: %d days ago)\n"
               "  -E, --until DAY    last day (default: today)\n"
               "  -b, --by KEY       user, project (the default), queue or day\n"
               "  -u, --user USER    only USER's usage\n"
               "  -p, --project PROJECT  only PROJECT's (also -A, --account)\n"
               "  -q, --queue QUEUE  only QUEUE's\n"
               "      --csv          comma-separated values\n"
               "      --plot         daily core-hours (and GPU-hours held and used) as charts in the\n"
               "                     terminal\n"
               "      --svg FILE     the same chart as an SVG file (-: standard output)\n"
               "  -j, --job JOBID    one job's efficiency (CPU, memory, GPUs) instead\n"
               "      --json         print the reply as JSON\n"
               "  -h, --help         show this help\n",
               DEFAULT_DAYS - 1);
}

static unsigned terminal_width(void) {
        struct winsize ws;
        const char *c = getenv("COLUMNS");

        if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) >= 0 && ws.ws_col >= 20)
                return ws.ws_col;
        if (c && atoi(c) >= 20)
                return (unsigned) atoi(c);
        return 80;
}

static void csv_field(FILE *f, const char *s) {
        if (!strpbrk(s, ",\"\n")) {
                fputs(s, f);
                return;
        }
        fputc('"', f);
        for (; *s; s++) {
                if (*s == '"')
                        fputc('"', f);
                fputc(*s, f);
        }
        fputc('"', f);
}

/* Whether the row's GPU-hours used and efficiency are known: some GPU of it was read. */
static bool gpu_sampled(json_object *r) {
        json_object *v;

        return json_object_object_get_ex(r, "gpu_efficiency", &v) &&
               (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int));
}

static void print_csv(json_object *rows, const char *by) {
        printf("%s,jobs,core_hours,service_units,cpu_hours,efficiency,memory_peak,io_read_bytes,io_write_bytes,io_ops",
               by);
        for (size_t i = 0; i < ELEMENTSOF(charge_stall_names); i++)
                printf(",%s_sec", charge_stall_names[i]);
        /* Last, so that readers of the older columns by position are not broken; GPU-hours
         * used and efficiency empty where no GPU was read. */
        printf(",gpu_hours,gpu_hours_used,gpu_efficiency\n");
        for (size_t i = 0; i < json_object_array_length(rows); i++) {
                json_object *r = json_object_array_get_idx(rows, i), *k, *st = NULL;

                csv_field(stdout, json_object_object_get_ex(r, "key", &k) ? json_object_get_string(k) : "");
                printf(",%" PRIu64 ",%.6f,%.6f,%.6f,%.4f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, json_field_unum(r, "jobs"),
                       json_field_num(r, "core_hours"), json_field_num(r, "service_units"), json_field_num(r, "cpu_hours"), json_field_num(r, "efficiency"),
                       json_field_unum(r, "memory_peak"), json_field_unum(r, "io_read_bytes"), json_field_unum(r, "io_write_bytes"), json_field_unum(r, "io_ops"));
                (void) json_object_object_get_ex(r, "stall_sec", &st);
                for (size_t s = 0; s < ELEMENTSOF(charge_stall_names); s++)
                        printf(",%.3f", st ? json_field_num(st, charge_stall_names[s]) : 0.0);
                printf(",%.6f", json_field_num(r, "gpu_hours"));
                if (gpu_sampled(r))
                        printf(",%.6f,%.4f\n", json_field_num(r, "gpu_hours_used"), json_field_num(r, "gpu_efficiency"));
                else
                        printf(",,\n");
        }
}

static int add_table_row(Table *t, const char *key, json_object *r, bool gpus) {
        char c[16][48];
        const char *cells[16];
        json_object *st = NULL;
        size_t n = 0;

        (void) json_object_object_get_ex(r, "stall_sec", &st);
        snprintf(c[n++], sizeof c[0], "%s", key);
        snprintf(c[n++], sizeof c[0], "%" PRIu64, json_field_unum(r, "jobs"));
        snprintf(c[n++], sizeof c[0], "%.2f", json_field_num(r, "core_hours"));
        if (gpus) {
                bool sampled = gpu_sampled(r);
                snprintf(c[n++], sizeof c[0], "%.2f", json_field_num(r, "gpu_hours"));
                if (sampled) {
                        snprintf(c[n++], sizeof c[0], "%.2f", json_field_num(r, "gpu_hours_used"));
                        snprintf(c[n++], sizeof c[0], "%.1f%%", 100.0 * json_field_num(r, "gpu_efficiency"));
                } else {
                        snprintf(c[n++], sizeof c[0], "-");
                        snprintf(c[n++], sizeof c[0], "-");
                }
        }
        snprintf(c[n++], sizeof c[0], "%.2f", json_field_num(r, "service_units"));
        snprintf(c[n++], sizeof c[0], "%.2f", json_field_num(r, "cpu_hours"));
        snprintf(c[n++], sizeof c[0], "%.1f%%", 100.0 * json_field_num(r, "efficiency"));
        format_size(c[n++], sizeof c[0], json_field_unum(r, "memory_peak"));
        format_size(c[n++], sizeof c[0], json_field_unum(r, "io_read_bytes"));
        format_size(c[n++], sizeof c[0], json_field_unum(r, "io_write_bytes"));
        snprintf(c[n++], sizeof c[0], "%" PRIu64, json_field_unum(r, "io_ops"));
        snprintf(c[n++], sizeof c[0], "%.1fs", st ? json_field_num(st, "cpu_some") : 0.0);
        snprintf(c[n++], sizeof c[0], "%.1fs", st ? json_field_num(st, "memory_some") : 0.0);
        snprintf(c[n++], sizeof c[0], "%.1fs", st ? json_field_num(st, "io_some") : 0.0);
        for (size_t i = 0; i < n; i++)
                cells[i] = c[i];
        return table_add_row(t, cells);
}

/* Whether any row used GPUs: the GPU-H column, and the GPU-hours chart, only then. */
static bool rows_have_gpus(json_object *rows) {
        for (size_t i = 0; i < json_object_array_length(rows); i++)
                if (json_field_num(json_object_array_get_idx(rows, i), "gpu_hours") > 0)
                        return true;
        return false;
}

static int print_table(json_object *rows, json_object *total, const char *by) {
        char key[16];
        bool gpus = rows_have_gpus(rows);
        const char *headers[] = { key, "JOBS", "CORE-H", "GPU-H", "GPU-USED", "GPU-EFF", "SU", "CPU-H", "EFF",
                                  "MEM-PEAK", "READ", "WRITTEN", "IO-OPS", "STALL-CPU", "STALL-MEM", "STALL-IO", NULL };
        _cleanup_table_ Table *t = NULL;
        size_t n = json_object_array_length(rows);

        if (!gpus) /* GPU-H, GPU-USED and GPU-EFF out: the rest moves up */
                memmove(headers + 3, headers + 6, (ELEMENTSOF(headers) - 6) * sizeof headers[0]);
        for (size_t i = 0; i < sizeof key - 1 && by[i]; i++)
                key[i] = (char) (by[i] >= 'a' && by[i] <= 'z' ? by[i] - 'a' + 'A' : by[i]);
        key[MIN(strlen(by), sizeof key - 1)] = 0;
        t = table_new(headers);
        if (!t)
                return -ENOMEM;
        for (size_t i = 1; headers[i]; i++)
                table_set_align_right(t, i, true);
        for (size_t i = 0; i < n; i++) {
                json_object *r = json_object_array_get_idx(rows, i), *k;
                if (add_table_row(t, json_object_object_get_ex(r, "key", &k) ? json_object_get_string(k) : "-", r,
                                  gpus) < 0)
                        return -ENOMEM;
        }
        if (total && n > 1 && add_table_row(t, "TOTAL", total, gpus) < 0)
                return -ENOMEM;
        if (n == 0) {
                printf("No usage in this period.\n");
                return 0;
        }
        return table_print(t, stdout, true, 0, SIZE_MAX);
}

/* One chart of a row field per day, as text and/or SVG. */
static int plot_field(json_object *rows, const char *field, const char *how, const char *what, const char *since,
                      const char *until, bool all, const char *svg_path, bool text) {
        _cleanup_(usage_series_done) UsageSeries s = {};
        char title[160];
        int r;

        r = usage_series_days(&s, since, until);
        if (r < 0)
                return log_error_errno(r, "usage: cannot chart the days %s to %s: %m", since, until);
        for (size_t i = 0; i < json_object_array_length(rows); i++) {
                json_object *row = json_object_array_get_idx(rows, i), *k;
                if (json_object_object_get_ex(row, "key", &k))
                        (void) usage_series_add(&s, json_object_get_string(k), json_field_num(row, field));
        }
        snprintf(title, sizeof title, "%s %s per day, %s to %s%s", how, what, since, until,
                 all ? "" : " (yours and your projects')");
        if (text) {
                const char *cs = getenv("LC_ALL") ?: getenv("LC_CTYPE") ?: getenv("LANG") ?: "";
                bool utf8 = strstr(cs, "UTF-8") || strstr(cs, "utf8") || strstr(cs, "UTF8");
                r = usage_chart_text(stdout, &s, title, what, terminal_width(), 10, utf8);
                if (r < 0)
                        return log_error_errno(r, "usage: cannot print the chart: %m");
        }
        if (svg_path) {
                _cleanup_fclose_ FILE *f = streq(svg_path, "-") ? NULL : fopen(svg_path, "we");
                if (!streq(svg_path, "-") && !f)
                        return log_error_errno(errno, "usage: cannot write %s: %m", svg_path);
                r = usage_chart_svg(f ?: stdout, &s, title, what);
                if (r >= 0 && f && fflush(f) != 0)
                        r = -errno;
                if (r < 0)
                        return log_error_errno(r, "usage: cannot write %s: %m", svg_path);
        }
        return 0;
}

/* FILE with suffix before its extension, or after it; NULL for none or standard output. */
static int svg_path_with(const char *svg_path, const char *suffix, char **ret) {
        const char *dot, *slash;
        size_t stem;

        *ret = NULL;
        if (!svg_path || streq(svg_path, "-"))
                return 0;
        dot = strrchr(svg_path, '.');
        slash = strrchr(svg_path, '/');
        stem = dot && (!slash || dot > slash) ? (size_t) (dot - svg_path) : strlen(svg_path);
        return asprintf(ret, "%.*s%s%s", (int) stem, svg_path, suffix, svg_path + stem) < 0 ? -ENOMEM : 0;
}

/* Whether any row's GPUs were read: the GPU-hours used chart only then. */
static bool rows_have_gpu_samples(json_object *rows) {
        for (size_t i = 0; i < json_object_array_length(rows); i++)
                if (gpu_sampled(json_object_array_get_idx(rows, i)))
                        return true;
        return false;
}

/* Core-hours per day; with GPU usage in the period, GPU-hours held per day after it (the
 * SVG as FILE with "-gpu" before its extension, or after it), and where GPUs were read the
 * GPU-hours used ("-gpu-used"). */
static int plot(json_object *rows, const char *since, const char *until, bool all, const char *svg_path,
                bool text) {
        _cleanup_free_ char *gpu_svg = NULL, *used_svg = NULL;
        int r;

        r = plot_field(rows, "core_hours", "Allocated", "core-hours", since, until, all, svg_path, text);
        if (r < 0 || !rows_have_gpus(rows))
                return r;
        if (svg_path_with(svg_path, "-gpu", &gpu_svg) < 0 || svg_path_with(svg_path, "-gpu-used", &used_svg) < 0)
                return log_oom();
        if (text)
                putchar('\n');
        r = plot_field(rows, "gpu_hours", "Allocated", "GPU-hours", since, until, all, gpu_svg, text);
        if (r < 0 || !rows_have_gpu_samples(rows))
                return r;
        /* A day whose GPUs were not read adds nothing: its bar is what was read. */
        if (text)
                putchar('\n');
        return plot_field(rows, "gpu_hours_used", "Used", "GPU-hours", since, until, all, used_svg, text);
}

/* corral usage --job: one job's figures, as seff prints them. */
static int job_usage(Cli *cli, const char *arg) {
        _cleanup_(job_efficiency_view_done) JobEfficiencyView v = {};
        int r;

        r = job_efficiency_fetch(cli, arg, false, &v);
        if (r != 0)
                return r;
        if (cli->json) {
                _cleanup_json_ json_object *o = job_efficiency_to_json(&v.eff);
                if (!o)
                        return cli_oom();
                return cli_print_json_status(o);
        }
        r = job_efficiency_print(stdout, &v.eff);
        return r < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS;
}

int verb_usage(Cli *cli, int argc, char **argv) {
        enum { ARG_JSON = 0x100, ARG_CSV, ARG_PLOT, ARG_SVG };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, ARG_JSON },
                { "since", required_argument, NULL, 'S' },
                { "until", required_argument, NULL, 'E' },
                { "by", required_argument, NULL, 'b' },
                { "user", required_argument, NULL, 'u' },
                { "project", required_argument, NULL, 'p' },
                { "account", required_argument, NULL, 'A' },
                { "queue", required_argument, NULL, 'q' },
                { "csv", no_argument, NULL, ARG_CSV },
                { "plot", no_argument, NULL, ARG_PLOT },
                { "svg", required_argument, NULL, ARG_SVG },
                { "job", required_argument, NULL, 'j' },
                {},
        };
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_json_ json_object *params = json_object_new_object();
        const char *by = NULL, *user = NULL, *project = NULL, *queue = NULL, *svg = NULL, *job = NULL;
        char since[11] = "", until[11] = "";
        bool csv = false, chart = false, since_all = false, all;
        json_object *rows, *total = NULL, *v;
        int c, r;

        if (!params)
                return cli_oom();
        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, "hS:E:b:u:p:A:q:j:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        usage_help();
                        return CLI_EXIT_SUCCESS;
                case ARG_JSON:
                        cli->json = true;
                        break;
                case 'S':
                case 'E':
                        if (c == 'S' && streq(optarg, "all")) {
                                since_all = true;
                                break;
                        }
                        if (parse_day_arg(optarg, c == 'S' ? since : until) < 0) {
                                log_error("usage: %s: '%s' is not a day (YYYY-MM-DD, today, yesterday or Nd)",
                                          c == 'S' ? "--since" : "--until", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        if (c == 'S')
                                since_all = false;
                        break;
                case 'b':
                        if (!streq(optarg, "user") && !streq(optarg, "project") && !streq(optarg, "queue") &&
                            !streq(optarg, "day")) {
                                log_error("usage: --by: '%s' is none of user, project, queue, day", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        by = optarg;
                        break;
                case 'u':
                        user = optarg;
                        break;
                case 'p':
                case 'A':
                        project = optarg;
                        break;
                case 'q':
                        queue = optarg;
                        break;
                case ARG_CSV:
                        csv = true;
                        break;
                case ARG_PLOT:
                        chart = true;
                        break;
                case ARG_SVG:
                        svg = optarg;
                        break;
                case 'j':
                        job = optarg;
                        break;
                default:
                        log_error("usage: see corral usage --help");
                        return CLI_EXIT_USAGE;
                }
        if (optind < argc) {
                log_error("usage: unexpected argument '%s'", argv[optind]);
                return CLI_EXIT_USAGE;
        }
        if (job) {
                if (by || user || project || queue || csv || chart || svg || since[0] || until[0] || since_all) {
                        log_error("usage: --job shows one job; it goes with --json only");
                        return CLI_EXIT_USAGE;
                }
                return job_usage(cli, job);
        }
        if ((chart || svg) && by && !streq(by, "day")) {
                log_error("usage: --plot and --svg chart days; --by %s does not go with them", by);
                return CLI_EXIT_USAGE;
        }
        if ((chart || svg) && since_all) {
                log_error("usage: --plot and --svg need a first day (--since)");
                return CLI_EXIT_USAGE;
        }
        if (chart || svg)
                by = "day";
        if (!since[0] && !since_all)
                today_plus(since, -(DEFAULT_DAYS - 1));
        if (!until[0])
                today_plus(until, 0);
        if (!since_all && strcmp(since, until) > 0) {
                log_error("usage: --since %s is after --until %s", since, until);
                return CLI_EXIT_USAGE;
        }

        if ((!since_all && json_add_string(params, "since", since) < 0) || json_add_string(params, "until", until) < 0 ||
            json_add_string(params, "by", by ?: "project") < 0 || json_add_string(params, "user", user) < 0 ||
            json_add_string(params, "project", project) < 0 || json_add_string(params, "queue", queue) < 0)
                return cli_oom();
        r = cli_call_reply(cli, CORRAL_METHOD_USAGE, TAKE_PTR(params), NULL, &reply);
        if (r != 0)
                return r;
        if (!json_object_object_get_ex(reply.parameters, "rows", &rows) || !json_object_is_type(rows, json_type_array)) {
                log_error("usage: corrald's reply has no rows this corral can read");
                return CLI_EXIT_FAILURE;
        }
        (void) json_object_object_get_ex(reply.parameters, "total", &total);
        all = json_object_object_get_ex(reply.parameters, "all", &v) && json_object_get_boolean(v);

        if (chart || svg) {
                r = plot(rows, since, until, all, svg, chart);
                if (r < 0)
                        return CLI_EXIT_FAILURE;
                if (!cli->json && !csv)
                        return CLI_EXIT_SUCCESS;
        }
        if (cli->json)
                return cli_print_json_status(reply.parameters);
        if (csv) {
                print_csv(rows, by ?: "project");
                return ferror(stdout) ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS;
        }
        if (!all)
                printf("Your usage and your projects' (administrators see everyone's), ");
        else
                printf("Usage, ");
        printf("%s to %s (UTC days):\n", since_all ? "the beginning" : since, until);
        r = print_table(rows, total, by ?: "project");
        if (r == -ENOMEM)
                return cli_oom();
        if (json_object_object_get_ex(reply.parameters, "truncated", &v) && json_object_get_boolean(v))
                printf("(more rows than one reply holds; narrow the period or use --by project)\n");
        return r < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS;
}
