/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral info and corral reload: the daemon-wide verbs. */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "log.h"
#include "parse-util.h"
#include "proto/device-info.h"
#include "strv.h"
#include "table.h"

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

int devices_print(FILE *f, const DeviceInfo *devices, size_t n) {
        static const char *const headers[] = { "GPU", "NAME", "MODEL", "NUMA", "PCI", "FEATURES", "JOB", NULL };
        _cleanup_table_ Table *t = table_new(headers);
        int r;

        if (!t)
                return -ENOMEM;
        table_set_align_right(t, 0, true);
        for (size_t i = 0; i < n; i++) {
                const DeviceInfo *d = &devices[i];
                char index[16], numa[16], job[64];
                _cleanup_free_ char *features = NULL, *shared = NULL, *mig_model = NULL, *mig_where = NULL;
                size_t len = 0;

                snprintf(index, sizeof index, "%" PRIu32, d->index);
                if (d->numa_node >= 0)
                        snprintf(numa, sizeof numa, "%d", d->numa_node);
                else
                        strcpy(numa, "-");
                if (d->job_id > 0)
                        snprintf(job, sizeof job, "%" PRIu64 " (%s)%s", d->job_id, strna(d->user),
                                 d->offline ? ", gone" : "");
                else
                        strcpy(job, d->mig_mode ? "MIG mode" : d->offline ? "gone" : "free");
                /* A MIG device: its profile beside its GPU's model, where it is in the GPU. */
                if (d->mig_of || d->mig_profile) {
                        if (asprintf(&mig_model, "%s%sMIG %s", strempty(d->model), d->model ? " " : "",
                                     d->mig_profile ?: "(profile not read yet)") < 0 ||
                            asprintf(&mig_where, "%s GI %" PRIu32 " CI %" PRIu32, d->mig_of ?: "?", d->mig_gi, d->mig_ci) < 0)
                                return -ENOMEM;
                }
                /* A shared GPU (Shards=): its shards in use and who holds them. */
                if (d->shards > 0 && d->job_id == 0 && !d->offline) {
                        size_t size = 0;
                        FILE *m = open_memstream(&shared, &size);

                        if (!m)
                                return -ENOMEM;
                        if (d->shards_used == 0)
                                fprintf(m, "free, %" PRIu32 " shards", d->shards);
                        else
                                fprintf(m, "%" PRIu32 "/%" PRIu32 " shards:", d->shards_used, d->shards);
                        for (size_t k = 0; k < d->n_shard_holders; k++)
                                fprintf(m, "%s %" PRIu64 " (%s, %" PRIu32 ")", k > 0 ? "," : "",
                                        d->shard_holders[k].job_id, strna(d->shard_holders[k].user),
                                        d->shard_holders[k].shards);
                        if (fclose(m) != 0)
                                return -ENOMEM;
                }
                STRV_FOREACH(x, d->features)
                        len += strlen(*x) + 1;
                if (len > 0) {
                        features = new0(char, len);
                        if (!features)
                                return -ENOMEM;
                        STRV_FOREACH(x, d->features) {
                                if (x != d->features)
                                        strcat(features, ",");
                                strcat(features, *x);
                        }
                }
                r = table_add_row(t, (const char *const[]) { index, d->name, mig_model ?: d->model ?: "unknown", numa,
                                                             mig_where ?: d->pci_address ?: "-", features ?: "-",
                                                             shared ?: job });
                if (r < 0)
                        return r;
        }
        r = table_print(t, f, true, 0, table_get_rows(t));
        if (r < 0)
                return r;
        return ferror(f) ? -EIO : 0;
}

/* NVML's figures per GPU, as the last snapshot read them. */
static void gpu_telemetry_print(FILE *f, json_object *gpus) {
        size_t n = json_object_array_length(gpus);
        json_object *v;
        char a[32], b[32];
        uint64_t u;

        if (n == 0)
                return;
        fprintf(f, "\nNVML:\n");
        for (size_t i = 0; i < n; i++) {
                json_object *g = json_object_array_get_idx(gpus, i);

                fprintf(f, "  %s", strna(get_string(g, "uuid")));
                if (get_string(g, "pci_address"))
                        fprintf(f, " %s", get_string(g, "pci_address"));
                if (get_u64(g, "utilization", &u))
                        fprintf(f, "  %" PRIu64 "%% busy", u);
                if (get_u64(g, "memory_used", &u))
                        fprintf(f, "  %s used", format_size(a, sizeof a, u));
                if (get_u64(g, "memory_total", &u))
                        fprintf(f, " of %s", format_size(b, sizeof b, u));
                if (get_u64(g, "power_mw", &u))
                        fprintf(f, "  %.0f W", (double) u / 1000.0);
                if (get_u64(g, "temperature", &u))
                        fprintf(f, "  %" PRIu64 " C", u);
                if (get_string(g, "cpus"))
                        fprintf(f, "  near CPUs %s", get_string(g, "cpus"));
                if (json_object_object_get_ex(g, "mig", &v) && json_object_get_boolean(v))
                        fprintf(f, "  MIG on");
                if (get_u64(g, "processes", &u))
                        fprintf(f, "  %" PRIu64 " process%s", u, u == 1 ? "" : "es");
                fprintf(f, "\n");
                /* MIG devices, as NVML lists them (read, not scheduled apart yet). */
                if (json_object_object_get_ex(g, "mig_devices", &v) && json_object_is_type(v, json_type_array)) {
                        for (size_t k = 0; k < json_object_array_length(v); k++) {
                                json_object *x = json_object_array_get_idx(v, k);
                                uint64_t gi = 0, ci = 0;

                                (void) get_u64(x, "gpu_instance", &gi);
                                (void) get_u64(x, "compute_instance", &ci);
                                fprintf(f, "    MIG %s %s (GI %" PRIu64 ", CI %" PRIu64, strna(get_string(x, "profile")),
                                        strna(get_string(x, "uuid")), gi, ci);
                                if (get_u64(x, "memory_total", &u))
                                        fprintf(f, ", %s", format_size(a, sizeof a, u));
                                fprintf(f, ")\n");
                        }
                }
                /* NVLink (NVML's link state and each link's far end). */
                if (json_object_object_get_ex(g, "nvlink", &v) && json_object_is_type(v, json_type_array)) {
                        size_t nl = json_object_array_length(v);

                        fprintf(f, "    NVLink:%s", nl == 0 ? " none active" : "");
                        for (size_t k = 0; k < nl; k++) {
                                json_object *l = json_object_array_get_idx(v, k), *sw;
                                bool is_switch = json_object_object_get_ex(l, "switch", &sw) && json_object_get_boolean(sw);

                                if (!get_u64(l, "links", &u))
                                        u = 0;
                                fprintf(f, "%s %s%s (%" PRIu64 " link%s)", k ? "," : "", is_switch ? "NVSwitch " : "",
                                        get_string(l, "gpu") ?: strna(get_string(l, "pci_address")), u,
                                        u == 1 ? "" : "s");
                        }
                        fprintf(f, "\n");
                }
                /* Work on it that is no job's (UnmanagedGPU=): whose. */
                if (json_object_object_get_ex(g, "outside_corral", &v) && json_object_is_type(v, json_type_array)) {
                        json_object *avoided;
                        bool avoid = json_object_object_get_ex(g, "avoided", &avoided) && json_object_get_boolean(avoided);

                        fprintf(f, "    in use outside Corral%s:", avoid ? " (no new job is given it)" : "");
                        for (size_t k = 0; k < json_object_array_length(v); k++) {
                                json_object *p = json_object_array_get_idx(v, k);
                                uint64_t pid = 0, uid = 0;

                                (void) get_u64(p, "pid", &pid);
                                (void) get_u64(p, "uid", &uid);
                                if (get_string(p, "user"))
                                        fprintf(f, "%s pid %" PRIu64 " (%s)", k ? "," : "", pid, get_string(p, "user"));
                                else
                                        fprintf(f, "%s pid %" PRIu64 " (uid %" PRIu64 ")", k ? "," : "", pid, uid);
                        }
                        fprintf(f, "\n");
                }
        }
}

int verb_info(Cli *cli, int argc, char **argv) {
        _cleanup_(reply_done) Reply reply = {};
        json_object *queues, *devices, *telemetry = NULL;
        uint64_t u;
        char buf[32];
        int r;

        if (!no_arguments("info", argc, argv, cli,
                          "Usage: corral info [--json]\n\n"
                          "Show corrald's version, this machine's CPUs, memory and GPUs (each with the job\n"
                          "holding it), and the queues.\n", &r))
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
        printf("        GPUs: %" PRIu64 "%s\n", get_u64(reply.parameters, "gpus", &u) ? u : 0,
               get_u64(reply.parameters, "gpus", &u) ? " (below)" : " (none found or declared)");
        if (json_object_object_get_ex(reply.parameters, "gpu_telemetry", &telemetry)) {
                const char *state = get_string(telemetry, "state"), *why = get_string(telemetry, "reason");

                printf("   Telemetry: %s", strna(state));
                if (get_u64(telemetry, "sample_sec", &u) && state && strcmp(state, "on") == 0)
                        printf(" (NVML, every %" PRIu64 " s)", u);
                printf("%s%s\n", why ? ": " : "", strempty(why));
                if (json_object_object_get_ex(telemetry, "disagreements", &devices) &&
                    json_object_is_type(devices, json_type_array))
                        for (size_t i = 0; i < json_object_array_length(devices); i++)
                                printf("              NVML and discovery differ: %s\n",
                                       strna(json_object_get_string(json_object_array_get_idx(devices, i))));
        }
        if (get_u64(reply.parameters, "jobs_running", &u)) {
                uint64_t w = 0, h = 0;

                (void) get_u64(reply.parameters, "jobs_waiting", &w);
                (void) get_u64(reply.parameters, "jobs_held", &h);
                printf("        Jobs: %" PRIu64 " running, %" PRIu64 " waiting, %" PRIu64 " held\n", u, w, h);
        }
        if (get_u64(reply.parameters, "last_pass_usec", &u)) {
                uint64_t n = 0;

                (void) get_u64(reply.parameters, "last_pass_jobs", &n);
                printf("   Last pass: %.1f ms, %" PRIu64 " job%s\n", (double) u / 1000.0, n, n == 1 ? "" : "s");
        }
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
        if (json_object_object_get_ex(reply.parameters, "devices", &devices)) {
                DeviceInfo *d = NULL;
                const char *bad = NULL;
                size_t n = 0;

                r = device_info_array_from_json(devices, &d, &n, &bad);
                if (r < 0)
                        return log_error_errno(r, "info: the daemon's device list does not decode (%s): %m",
                                               strna(bad)), CLI_EXIT_FAILURE;
                if (n > 0) {
                        printf("\n");
                        r = devices_print(stdout, d, n);
                }
                device_info_array_free(d, n);
                if (r < 0)
                        return log_error_errno(r, "info: %m"), CLI_EXIT_FAILURE;
        }
        if (telemetry && json_object_object_get_ex(telemetry, "gpus", &devices) &&
            json_object_is_type(devices, json_type_array))
                gpu_telemetry_print(stdout, devices);
        if (json_object_object_get_ex(reply.parameters, "unscheduled_gpus", &devices) &&
            json_object_is_type(devices, json_type_array))
                for (size_t i = 0; i < json_object_array_length(devices); i++)
                        printf("%s GPU %s\n", i ? "            " : "\nNot scheduled:",
                               strna(json_object_get_string(json_object_array_get_idx(devices, i))));
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
