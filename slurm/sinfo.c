/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sinfo(1) on corrald: one partition per queue, all on this one node. */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "slurm-common.h"

static int run(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'H' },      { "noheader", no_argument, NULL, 'h' },
                { "format", required_argument, NULL, 'o' }, { "partition", required_argument, NULL, 'p' },
                { "summarize", no_argument, NULL, 's' }, { "long", no_argument, NULL, 'l' },
                { "Node", no_argument, NULL, 'N' },      { "all", no_argument, NULL, 'a' },
                { "clusters", required_argument, NULL, 'M' }, { "nodes", required_argument, NULL, 'n' },
                { "Format", required_argument, NULL, 'O' }, { "list-reasons", no_argument, NULL, 'R' }, {},
        };
        _cleanup_(cli_done) Cli cli;
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_(slurm_format_done) SlurmFormat fmt = {};
        _cleanup_free_ SinfoPartition *parts = NULL;
        const char *format = SINFO_FORMAT_DEFAULT, *format_long = NULL, *partitions = NULL, *bad = NULL, *node,
                   *clusters = NULL;
        _cleanup_free_ char *cluster = NULL;
        json_object *queues;
        char gres[512] = "", gres_used[1024] = "", reason[1024] = "";
        const char *reason_user = NULL;
        uint64_t reason_time = 0;
        bool header = true, reasons_only = false, has_reason;
        unsigned cpus, allocated = 0;
        size_t n = 0, nq;
        int c, r;

        slurm_setup("sinfo", &cli, "error");
        while ((c = getopt_long(argc, argv, "ho:O:p:slNaM:n:R", options, NULL)) >= 0)
                switch (c) {
                case 'H':
                        printf("Usage: sinfo [-aNh] [-o FORMAT | -O FIELDS] [-p PARTITIONS]\n\n"
                               "corrald's queues as Slurm partitions on this one node. FORMAT fields:\n"
                               "%%P %%R %%a %%l %%D %%t %%T %%N %%n %%c %%m %%C %%F %%f %%G %%E %%u %%H; -O names:\n"
                               "Partition PartitionName Available Time Nodes StateCompact StateLong\n"
                               "NodeList NodeHost CPUs Memory CPUsState NodeAIOT Features Gres GresUsed\n"
                               "Reason User Timestamp, each NAME[:[.]WIDTH]. -M takes all or this\n"
                               "machine's cluster. -R lists the node if a GPU is in use outside Corral.\n"
                               "See corral-slurm(7).\n");
                        return 0;
                case 'h':
                        header = false;
                        break;
                case 'o':
                        format = optarg;
                        format_long = NULL;
                        break;
                case 'O':
                        format_long = optarg;
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
                        clusters = optarg;
                        break;
                case 'R':
                        reasons_only = true;
                        format = SINFO_FORMAT_REASONS;
                        format_long = NULL;
                        break;
                case 'n':
                        slurm_error("-%c: not supported on a single machine", c);
                        return 1;
                default:
                        return 1;
                }
        if (format_long) {
                r = sinfo_format_parse_long(format_long, &fmt, &bad);
                if (r == -ENOMEM)
                        return cli_oom();
                if (r < 0) {
                        slurm_error("Invalid node format specification: %s", bad ?: format_long);
                        return 1;
                }
        } else if (slurm_format_parse(format, &fmt) < 0) {
                slurm_error("Invalid format specification: %s", format);
                return 1;
        }
        if (sinfo_format_check(&fmt, &bad) < 0) {
                slurm_error("Invalid node format specification: %s", bad);
                return 1;
        }

        if (clusters && (r = slurm_check_clusters(&cli, clusters, &cluster)) != 0)
                return r;
        r = slurm_machine_state(&cli, &reply, &allocated, gres, sizeof gres, gres_used, sizeof gres_used);
        if (r != 0)
                return r;

        has_reason = slurm_node_reason(reply.parameters, reason, sizeof reason, &reason_user, &reason_time);
        cpus = (unsigned) slurm_json_u64(reply.parameters, "cpus");
        node = slurm_json_str(reply.parameters, "hostname") ?: "localhost";
        if (!json_object_object_get_ex(reply.parameters, "queues", &queues) ||
            !json_object_is_type(queues, json_type_array)) {
                slurm_error("corrald sent no queues");
                return 1;
        }
        nq = json_object_array_length(queues);
        parts = new0(SinfoPartition, nq + 1);
        if (!parts)
                return cli_oom();
        for (size_t i = 0; i < nq; i++) {
                json_object *q = json_object_array_get_idx(queues, i), *d;
                const char *name = slurm_json_str(q, "name");

                if (!name || !slurm_list_contains(partitions, name))
                        continue;
                parts[n++] = (SinfoPartition) {
                        .name = name,
                        .is_default = json_object_object_get_ex(q, "default", &d) && json_object_get_boolean(d),
                        .max_walltime = slurm_json_u64(q, "max_walltime"),
                        .node = node,
                        .cpus = cpus,
                        .cpus_allocated = allocated,
                        .memory = slurm_json_u64(reply.parameters, "memory"),
                        .gres = gres,
                        .gres_used = gres_used,
                        .reason = has_reason ? reason : NULL,
                        .reason_user = reason_user,
                        .reason_time = reason_time,
                };
        }
        /* -R: only a node with a reason (Slurm's down or drained ones; here a GPU in use
         * outside Corral). */
        if (reasons_only && !has_reason)
                n = 0;
        /* As Slurm's with -M: the cluster's name first, unless -h. */
        if (cluster && header)
                printf("CLUSTER: %s\n", cluster);
        r = sinfo_print(stdout, &fmt, parts, n, header);
        if (r < 0)
                return log_error_errno(r, "error: cannot write: %m"), 1;
        return 0;
}

SLURM_MAIN(run)
