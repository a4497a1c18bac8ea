/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sinfo(1) on corrald: one partition per queue, all on this one node. */

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "proto/device-info.h"
#include "slurm-common.h"

static uint64_t get_u64(json_object *o, const char *key) {
        json_object *v;
        uint64_t u = 0;

        if (json_object_object_get_ex(o, key, &v))
                (void) json_get_u64(v, 0, (uint64_t) INT64_MAX - 1, &u);
        return u;
}

static const char *get_str(json_object *o, const char *key) {
        json_object *v;

        if (json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
                return json_object_get_string(v);
        return NULL;
}

static int run(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'H' },      { "noheader", no_argument, NULL, 'h' },
                { "format", required_argument, NULL, 'o' }, { "partition", required_argument, NULL, 'p' },
                { "summarize", no_argument, NULL, 's' }, { "long", no_argument, NULL, 'l' },
                { "Node", no_argument, NULL, 'N' },      { "all", no_argument, NULL, 'a' },
                { "clusters", required_argument, NULL, 'M' }, { "nodes", required_argument, NULL, 'n' },
                {},
        };
        _cleanup_(cli_done) Cli cli;
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_(job_list_done) JobList l = {};
        _cleanup_(slurm_format_done) SlurmFormat fmt = {};
        _cleanup_free_ SinfoPartition *parts = NULL;
        const char *format = SINFO_FORMAT_DEFAULT, *partitions = NULL, *bad = NULL, *node;
        json_object *queues, *devices;
        char gres[512] = "";
        bool header = true;
        unsigned cpus, allocated = 0;
        size_t n = 0, nq;
        int c, r;

        slurm_setup("sinfo", &cli, "error");
        while ((c = getopt_long(argc, argv, "ho:p:slNaM:n:", options, NULL)) >= 0)
                switch (c) {
                case 'H':
                        printf("Usage: sinfo [-h] [-o FORMAT] [-p PARTITIONS]\n\n"
                               "corrald's queues as Slurm partitions on this one node. FORMAT fields:\n"
                               "%%P %%R %%a %%l %%D %%t %%T %%N %%n %%c %%m %%C. See corral-slurm(7).\n");
                        return 0;
                case 'h':
                        header = false;
                        break;
                case 'o':
                        format = optarg;
                        break;
                case 'p':
                        partitions = optarg;
                        break;
                case 's':
                case 'l':
                case 'N':
                case 'a':
                        break; /* one node: the same lines */
                case 'M':
                case 'n':
                        slurm_error("-%c: not supported on a single machine", c);
                        return 1;
                default:
                        return 1;
                }
        if (slurm_format_parse(format, &fmt) < 0) {
                slurm_error("Invalid format specification: %s", format);
                return 1;
        }
        if (sinfo_format_check(&fmt, &bad) < 0) {
                slurm_error("Invalid node format specification: %s", bad);
                return 1;
        }

        r = cli_call(&cli, CORRAL_METHOD_GET_INFO, NULL, &reply);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (reply.error)
                return cli_report_error(&cli, NULL, &reply);
        r = slurm_list_jobs(&cli, json_object_new_object(), false, &l);
        if (r != 0)
                return r;
        for (size_t i = 0; i < l.n; i++)
                if (queue_section_of_state(l.items[i].info.state) == QUEUE_SECTION_ACTIVE)
                        allocated += l.items[i].info.cpus;

        cpus = (unsigned) get_u64(reply.parameters, "cpus");
        node = get_str(reply.parameters, "hostname") ?: "localhost";
        if (!json_object_object_get_ex(reply.parameters, "queues", &queues) ||
            !json_object_is_type(queues, json_type_array)) {
                slurm_error("corrald sent no queues");
                return 1;
        }
        if (json_object_object_get_ex(reply.parameters, "devices", &devices)) {
                DeviceInfo *d = NULL;
                const char *field = NULL;
                size_t nd = 0;

                if (device_info_array_from_json(devices, &d, &nd, &field) < 0) {
                        slurm_error("corrald sent an invalid device list (%s)", strna(field));
                        return 1;
                }
                sinfo_format_gres(d, nd, gres, sizeof gres);
                device_info_array_free(d, nd);
        }
        nq = json_object_array_length(queues);
        parts = new0(SinfoPartition, nq + 1);
        if (!parts)
                return cli_oom();
        for (size_t i = 0; i < nq; i++) {
                json_object *q = json_object_array_get_idx(queues, i), *d;
                const char *name = get_str(q, "name");

                if (!name || !slurm_list_contains(partitions, name))
                        continue;
                parts[n++] = (SinfoPartition) {
                        .name = name,
                        .is_default = json_object_object_get_ex(q, "default", &d) && json_object_get_boolean(d),
                        .max_walltime = get_u64(q, "max_walltime"),
                        .node = node,
                        .cpus = cpus,
                        .cpus_allocated = allocated,
                        .memory = get_u64(reply.parameters, "memory"),
                        .gres = gres,
                };
        }
        r = sinfo_print(stdout, &fmt, parts, n, header);
        if (r < 0)
                return log_error_errno(r, "error: cannot write: %m"), 1;
        return 0;
}

SLURM_MAIN(run)
