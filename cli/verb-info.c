/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral info and corral reload: the daemon-wide verbs. */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>

#include "commands.h"
#include "log.h"
#include "parse-util.h"

static const char *get_string(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static bool get_u64(json_object *o, const char *key, uint64_t *ret) {
        json_object *v;
        int64_t i;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return false;
        i = json_object_get_int64(v);
        if (i < 0)
                return false;
        *ret = (uint64_t) i;
        return true;
}

static bool no_arguments(const char *verb, int argc, char **argv, Cli *cli, const char *help, int *ret) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, 'j' },
                {},
        };
        int c;

        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        fputs(help, stdout);
                        *ret = CLI_EXIT_SUCCESS;
                        return false;
                case 'j':
                        cli->json = true;
                        break;
                default:
                        log_error("%s: see corral %s --help", verb, verb);
                        *ret = CLI_EXIT_USAGE;
                        return false;
                }
        if (optind < argc) {
                log_error("%s: unexpected argument '%s'", verb, argv[optind]);
                *ret = CLI_EXIT_USAGE;
                return false;
        }
        return true;
}

int verb_info(Cli *cli, int argc, char **argv) {
        _cleanup_(reply_done) Reply reply = {};
        json_object *queues;
        uint64_t u;
        char buf[32];
        int r;

        if (!no_arguments("info", argc, argv, cli,
                          "Usage: corral info [--json]\n\n"
                          "Show corrald's version, this machine's CPUs and memory, and the queues.\n", &r))
                return r;

        r = cli_call_reply(cli, CORRAL_METHOD_GET_INFO, NULL, NULL, &reply);
        if (r != 0)
                return r;
        if (cli->json)
                return cli_print_json_status(reply.parameters);

        printf("        Host: %s\n", strna(get_string(reply.parameters, "hostname")));
        printf("     corrald: %s", strna(get_string(reply.parameters, "version")));
        if (get_u64(reply.parameters, "protocol_version", &u))
                printf(" (protocol %" PRIu64 ")", u);
        printf("\n      corral: %s (protocol %d)\n", PACKAGE_VERSION, CORRAL_PROTOCOL_VERSION);
        if (get_u64(reply.parameters, "cpus", &u))
                printf("        CPUs: %" PRIu64 "\n", u);
        if (get_u64(reply.parameters, "memory", &u))
                printf("      Memory: %s\n", format_size(buf, sizeof(buf), u));
        printf("      Socket: %s\n", client_path(cli->client));
        if (json_object_object_get_ex(reply.parameters, "queues", &queues) &&
            json_object_is_type(queues, json_type_array)) {
                size_t n = json_object_array_length(queues);

                printf("      Queues:");
                for (size_t i = 0; i < n; i++) {
                        json_object *q = json_object_array_get_idx(queues, i), *prio;

                        printf("%s %s", i > 0 ? "," : "", strna(get_string(q, "name")));
                        if (json_object_object_get_ex(q, "priority", &prio) &&
                            json_object_is_type(prio, json_type_int))
                                printf(" (priority %" PRIi64 ")", json_object_get_int64(prio));
                }
                printf("%s\n", n == 0 ? " none" : "");
        }
        if (json_object_object_get_ex(reply.parameters, "projects", &queues) &&
            json_object_is_type(queues, json_type_array)) {
                size_t n = json_object_array_length(queues);

                printf("    Projects:");
                for (size_t i = 0; i < n; i++)
                        printf("%s %s", i > 0 ? "," : "", strna(json_object_get_string(json_object_array_get_idx(queues, i))));
                printf("\n");
        } else
                printf("    Projects: every unix group (no files in /etc/corral/projects.d)\n");
        if (get_string(reply.parameters, "config_in_force"))
                printf("      Config: %s\n", get_string(reply.parameters, "config_in_force"));
        if (get_string(reply.parameters, "config_error"))
                printf("Config error: the configuration on disk does not load, corrald runs on the one above:\n"
                       "              %s\n", get_string(reply.parameters, "config_error"));
        return CLI_EXIT_SUCCESS;
}

int verb_reload(Cli *cli, int argc, char **argv) {
        _cleanup_(reply_done) Reply reply = {};
        int r;

        if (!no_arguments("reload", argc, argv, cli,
                          "Usage: corral reload [--json]\n\n"
                          "Make corrald re-read its configuration (administrators only).\n", &r))
                return r;

        r = cli_call_reply(cli, CORRAL_METHOD_RELOAD, NULL, NULL, &reply);
        if (r != 0)
                return r;
        if (cli->json)
                (void) cli_print_json(reply.parameters);
        return CLI_EXIT_SUCCESS;
}
