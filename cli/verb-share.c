/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral share (sshare): each project's share, decayed usage, fair-share factor and
 * what is left of its grant. */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "commands.h"
#include "log.h"
#include "parse-util.h"
#include "table.h"

static double num(json_object *o, const char *key, bool *ret_has) {
        json_object *v;
        bool has = json_object_object_get_ex(o, key, &v) &&
                   (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int));

        if (ret_has)
                *ret_has = has;
        return has ? json_object_get_double(v) : 0.0;
}

static char *format_day(char *buf, size_t size, double t) {
        time_t tt = (time_t) t;
        struct tm tm;

        if (!gmtime_r(&tt, &tm) || strftime(buf, size, "%Y-%m-%d", &tm) == 0)
                snprintf(buf, size, "-");
        return buf;
}

int verb_share(Cli *cli, int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, 'j' },
                {},
        };
        static const char *const headers[] = { "PROJECT", "SHARE", "USAGE", "NORM-USAGE", "FAIRSHARE", "GRANT",
                                               "USED",    "LEFT",  "PERIOD", NULL };
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_table_ Table *t = NULL;
        json_object *projects, *user;
        double total, half_life;
        char hl[64];
        int c, r;

        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("Usage: corral share [--json]\n\n"
                               "Show each project's fair-share target (Share=), its decayed usage in\n"
                               "core-hours (running jobs included, express jobs left out), its fair-share\n"
                               "factor 1e6 x (1 - usage / total usage), which orders the jobs of a queue,\n"
                               "and what is left of its grant (service units) in the current period.\n");
                        return CLI_EXIT_SUCCESS;
                case 'j':
                        cli->json = true;
                        break;
                default:
                        log_error("share: see corral share --help");
                        return CLI_EXIT_USAGE;
                }
        if (optind < argc) {
                log_error("share: unexpected argument '%s'", argv[optind]);
                return CLI_EXIT_USAGE;
        }

        r = cli_call_reply(cli, CORRAL_METHOD_SHARE, NULL, NULL, &reply);
        if (r != 0)
                return r;
        if (cli->json)
                return cli_print_json_status(reply.parameters);
        if (!json_object_object_get_ex(reply.parameters, "projects", &projects) ||
            !json_object_is_type(projects, json_type_array)) {
                log_error("share: corrald's reply has no projects this corral can read");
                return CLI_EXIT_FAILURE;
        }
        total = num(reply.parameters, "total_usage", NULL);
        half_life = num(reply.parameters, "half_life_sec", NULL);

        t = table_new(headers);
        if (!t)
                return cli_oom();
        for (size_t i = 1; i <= 7; i++)
                table_set_align_right(t, i, true);
        for (size_t i = 0; i < json_object_array_length(projects); i++) {
                json_object *p = json_object_array_get_idx(projects, i), *name;
                char cell[8][48];
                const char *cells[9];
                bool has_grant, has_end;
                double usage = num(p, "usage", NULL), share = num(p, "share", NULL), end;

                snprintf(cell[0], sizeof cell[0], "%.0f", share);
                snprintf(cell[1], sizeof cell[1], "%.2f", usage);
                snprintf(cell[2], sizeof cell[2], "%.4f", total > 0 ? usage / total : 0.0);
                snprintf(cell[3], sizeof cell[3], "%.0f", num(p, "fairshare", NULL));
                snprintf(cell[4], sizeof cell[4], "%.0f", num(p, "grant", &has_grant));
                snprintf(cell[5], sizeof cell[5], "%.2f", num(p, "grant_used", NULL));
                snprintf(cell[6], sizeof cell[6], "%.2f", num(p, "grant_left", NULL));
                end = num(p, "period_end", &has_end);
                if (has_grant) {
                        char a[16], b[16];
                        snprintf(cell[7], sizeof cell[7], "%s..%s", format_day(a, sizeof a, num(p, "period_begin", NULL)),
                                 has_end ? format_day(b, sizeof b, end - 1) : "");
                }
                cells[0] = json_object_object_get_ex(p, "name", &name) ? json_object_get_string(name) : "-";
                cells[1] = share > 0 ? cell[0] : "-";
                cells[2] = cell[1];
                cells[3] = cell[2];
                cells[4] = cell[3];
                cells[5] = has_grant ? cell[4] : "-";
                cells[6] = has_grant ? cell[5] : "-";
                cells[7] = has_grant ? cell[6] : "-";
                cells[8] = has_grant ? cell[7] : "-";
                if (table_add_row(t, cells) < 0)
                        return cli_oom();
        }
        if (table_get_rows(t) == 0)
                printf("No projects and no usage yet.\n");
        else if (table_print(t, stdout, true, 0, SIZE_MAX) < 0)
                return CLI_EXIT_FAILURE;
        printf("\nUsage: decayed allocated core-hours, half-life %s; GRANT, USED, LEFT: service units.\n",
               half_life > 0 ? format_duration(hl, sizeof hl, (uint64_t) half_life) : "none (no decay)");
        if (json_object_object_get_ex(reply.parameters, "user", &user))
                printf("Your own usage: %.2f core-hours.\n", num(user, "usage", NULL));
        return CLI_EXIT_SUCCESS;
}
