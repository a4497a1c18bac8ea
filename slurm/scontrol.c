/* SPDX-License-Identifier: GPL-2.0-or-later */
/* scontrol(1) on corrald: show job, config, partition and node, and the job actions of
 * corral(1) (hold, release, requeue, suspend, resume) under Slurm's names. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "log.h"
#include "slurm-common.h"
#include "strv.h"

/* Slurm's default MaxArraySize, for a configuration we cannot read. */
#define SLURM_MAX_ARRAY_SIZE_DEFAULT 1001

static void help(void) {
        printf("Usage: scontrol [-d] [-o] show job[id] [JOBID]\n"
               "       scontrol [-o] show partition [NAME]\n"
               "       scontrol [-o] show node [NAME]\n"
               "       scontrol show config\n"
               "       scontrol hold|release|requeue|requeuehold|suspend|resume JOBID[,JOBID...]...\n\n"
               "corrald's jobs as Slurm's scontrol shows and changes them. See corral-slurm(7).\n");
}

static int show_jobs(Cli *cli, const char *which, bool oneliner) {
        _cleanup_(job_list_done) JobList l = {};
        _cleanup_free_ JobRef *refs = NULL;
        size_t n_refs = 0, shown = 0;
        time_t now = time(NULL);
        int r;

        if (which && slurm_parse_job_list(which, &refs, &n_refs) < 0) {
                slurm_error("Invalid job id specified");
                return 1;
        }
        r = slurm_list_jobs(cli, which ? NULL : json_object_new_object(), false, &l);
        if (r != 0)
                return r;
        for (size_t i = 0; i < l.n; i++) {
                _cleanup_(reply_done) Reply reply = {};
                _cleanup_(job_entry_done) JobEntry e = {};
                json_object *job;

                if (n_refs > 0 && !slurm_job_matches_refs(&l.items[i].info, refs, n_refs))
                        continue;
                /* Show: the owner's details (command, paths) when we may see them. */
                r = cli_call(cli, CORRAL_METHOD_SHOW, json_job_id(l.items[i].info.id), &reply);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                if (!reply.error && json_object_object_get_ex(reply.parameters, "job", &job) &&
                    job_entry_from_json(job, &e) >= 0)
                        r = scontrol_show_job(stdout, &e.info, now, oneliner);
                else
                        r = scontrol_show_job(stdout, &l.items[i].info, now, oneliner);
                if (r < 0)
                        return 1;
                shown++;
        }
        if (n_refs > 0 && shown == 0) {
                slurm_error("Invalid job id specified");
                return 1;
        }
        if (!which && shown == 0)
                printf("No jobs in the system\n");
        return 0;
}

static int show_config(Cli *cli) {
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_free_ char *error = NULL;
        Config *c = NULL;
        ShowConfig sc = {
                /* corrald's own, from the contract (protocol.h). */
                .min_job_age_sec = CORRAL_FINISHED_KEEP_SEC,
                .sched_interval_sec = CORRAL_SCHED_INTERVAL_SEC,
                .max_array_size = SLURM_MAX_ARRAY_SIZE_DEFAULT,
        };
        int r;

        r = slurm_get_info(cli, &reply);
        if (r != 0)
                return r;
        sc.hostname = slurm_json_str(reply.parameters, "hostname") ?: "localhost";
        sc.policy = slurm_json_str(reply.parameters, "policy");
        /* MaxArraySize= is corrald's configuration, which GetInfo does not send: read as
         * sacctmgr does. The file may be newer than what corrald runs until a reload. */
        if (config_load(CORRAL_CONFDIR, &c, &error) >= 0) {
                sc.max_array_size = c->max_array_size ?: CORRAL_ARRAY_TASKS_MAX;
                config_free(c);
        } else
                log_debug("Cannot read Corral's configuration (%s), MaxArraySize is Slurm's default.",
                          strna(error));
        r = scontrol_show_config(stdout, &sc, time(NULL));
        if (r < 0)
                return log_error_errno(r, "error: cannot write: %m"), 1;
        return 0;
}

static int show_partitions(Cli *cli, const char *which, bool oneliner) {
        _cleanup_(reply_done) Reply reply = {};
        json_object *queues;
        char gres[512];
        unsigned allocated;
        size_t shown = 0;
        int r;

        r = slurm_machine_state(cli, &reply, &allocated, gres, sizeof gres, NULL, 0);
        if (r != 0)
                return r;
        if (!json_object_object_get_ex(reply.parameters, "queues", &queues) ||
            !json_object_is_type(queues, json_type_array)) {
                slurm_error("corrald sent no queues");
                return 1;
        }
        for (size_t i = 0; i < json_object_array_length(queues); i++) {
                json_object *q = json_object_array_get_idx(queues, i), *d;
                const char *name = slurm_json_str(q, "name");
                SinfoPartition p;

                if (!name || (which && !streq(which, name)))
                        continue;
                p = (SinfoPartition) {
                        .name = name,
                        .is_default = json_object_object_get_ex(q, "default", &d) && json_object_get_boolean(d),
                        .max_walltime = slurm_json_u64(q, "max_walltime"),
                        .node = slurm_json_str(reply.parameters, "hostname") ?: "localhost",
                        .cpus = (unsigned) slurm_json_u64(reply.parameters, "cpus"),
                        .cpus_allocated = allocated,
                        .memory = slurm_json_u64(reply.parameters, "memory"),
                        .gres = gres,
                };
                r = scontrol_show_partition(stdout, &p, oneliner);
                if (r < 0)
                        return log_error_errno(r, "error: cannot write: %m"), 1;
                shown++;
        }
        if (which && shown == 0) {
                printf("Partition %s not found\n", which);
                return 1;
        }
        if (shown == 0)
                printf("No partitions in the system\n");
        return 0;
}

static int show_node(Cli *cli, const char *which, bool oneliner) {
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_free_ char *partitions = NULL;
        size_t len = 0;
        FILE *f;
        json_object *queues;
        char gres[512];
        ShowNode n = {};
        int r;

        r = slurm_machine_state(cli, &reply, &n.cpus_allocated, gres, sizeof gres, NULL, 0);
        if (r != 0)
                return r;
        n.name = slurm_json_str(reply.parameters, "hostname") ?: "localhost";
        if (which && !streq(which, n.name)) {
                printf("Node %s not found\n", which);
                return 1;
        }
        f = open_memstream(&partitions, &len);
        if (!f)
                return cli_oom();
        if (json_object_object_get_ex(reply.parameters, "queues", &queues) &&
            json_object_is_type(queues, json_type_array))
                for (size_t i = 0; i < json_object_array_length(queues); i++) {
                        const char *name = slurm_json_str(json_object_array_get_idx(queues, i), "name");
                        if (name)
                                fprintf(f, "%s%s", len > 0 || ftell(f) > 0 ? "," : "", name);
                }
        if (fclose(f) != 0)
                return cli_oom();
        n.cpus = (unsigned) slurm_json_u64(reply.parameters, "cpus");
        n.memory = slurm_json_u64(reply.parameters, "memory");
        n.gres = gres;
        n.partitions = partitions;
        r = scontrol_show_node(stdout, &n, oneliner);
        if (r < 0)
                return log_error_errno(r, "error: cannot write: %m"), 1;
        return 0;
}

static int job_action(Cli *cli, const char *verb, bool hold, int argc, char **argv) {
        _cleanup_strv_free_ char **ids = NULL;
        _cleanup_free_ char **args = NULL;
        size_t n;

        for (int i = 0; i < argc; i++) {
                _cleanup_strv_free_ char **l = NULL;
                if (strv_split(argv[i], ",", &l) < 0)
                        return cli_oom();
                STRV_FOREACH(s, l)
                        if (!isempty(*s) && strv_extend(&ids, *s) < 0)
                                return cli_oom();
        }
        n = strv_length(ids);
        if (n == 0) {
                slurm_error("Invalid job id specified");
                return 1;
        }
        /* corral's own verb, whose argv[0] is its name. */
        args = new0(char *, n + 3);
        if (!args)
                return cli_oom();
        args[0] = (char *) verb;
        size_t k = 1;
        if (hold)
                args[k++] = (char *) "--hold";
        for (size_t i = 0; i < n; i++)
                args[k++] = ids[i];
        cli->verb = verb;
        return verb_job_action(cli, (int) k, args) == 0 ? 0 : 1;
}

static bool is_oneliner(const char *a) {
        return streq(a, "-o") || streq(a, "--oneliner");
}

static int run(int argc, char *argv[]) {
        _cleanup_(cli_done) Cli cli;
        bool oneliner = false;
        const char *what;
        int i = 1;

        slurm_setup("scontrol", &cli, "error");
        /* -d, -dd (details: we always show what we have), -o/--oneliner. */
        while (i < argc && argv[i][0] == '-') {
                if (streq(argv[i], "-h") || streq(argv[i], "--help")) {
                        help();
                        return 0;
                }
                if (is_oneliner(argv[i]))
                        oneliner = true;
                else if (strspn(argv[i] + 1, "d") != strlen(argv[i] + 1) && !streq(argv[i], "--details")) {
                        slurm_error("%s: option not supported", argv[i]);
                        return 1;
                }
                i++;
        }
        if (i >= argc) {
                help();
                return 1;
        }
        if (streq(argv[i], "show")) {
                i++;
                while (i < argc && argv[i][0] == '-') /* "show jobid -dd 42" */
                        oneliner = oneliner || is_oneliner(argv[i++]);
                if (i >= argc) {
                        slurm_error("show: an entity is required (job, partition, node, config)");
                        return 1;
                }
                what = argv[i++];
                while (i < argc && argv[i][0] == '-')
                        oneliner = oneliner || is_oneliner(argv[i++]);
                if (i + 1 < argc) {
                        slurm_error("too many arguments");
                        return 1;
                }
                if (streq(what, "job") || streq(what, "jobid") || streq(what, "jobs"))
                        return show_jobs(&cli, i < argc ? argv[i] : NULL, oneliner);
                if (streq(what, "partition") || streq(what, "partitions"))
                        return show_partitions(&cli, i < argc ? argv[i] : NULL, oneliner);
                if (streq(what, "node") || streq(what, "nodes"))
                        return show_node(&cli, i < argc ? argv[i] : NULL, oneliner);
                /* Slurm's config has no one-line form: -o is ignored, as there. */
                if (streq(what, "config"))
                        return show_config(&cli);
                slurm_error("show %s: not supported by Corral (job, partition, node, config; see corral-slurm(7))",
                            what);
                return 1;
        }
        if (streq(argv[i], "hold") || streq(argv[i], "uhold") || streq(argv[i], "release") ||
            streq(argv[i], "suspend") || streq(argv[i], "resume") || streq(argv[i], "requeue"))
                return job_action(&cli, streq(argv[i], "uhold") ? "hold" : argv[i], false, argc - i - 1, argv + i + 1);
        if (streq(argv[i], "requeuehold"))
                return job_action(&cli, "requeue", true, argc - i - 1, argv + i + 1);
        slurm_error("%s: command not supported by Corral (see corral-slurm(7))", argv[i]);
        return 1;
}

SLURM_MAIN(run)
