/* SPDX-License-Identifier: GPL-2.0-or-later */
/* scontrol(1) on corrald: show job, config, partition and node, and the job actions of
 * corral(1) (hold, release, requeue, suspend, resume) under Slurm's names. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "hostlist.h"
#include "log.h"
#include "slurm-common.h"
#include "strv.h"

/* Slurm's default MaxArraySize, for a configuration we cannot read. */
#define SLURM_MAX_ARRAY_SIZE_DEFAULT 1001

static void help(void) {
        printf("Usage: scontrol [-d] [-o] [-M CLUSTER] show job[id] [JOBID]\n"
               "       scontrol [-o] show partition [NAME]\n"
               "       scontrol [-o] show node [NAME]\n"
               "       scontrol show config\n"
               "       scontrol show hostnames [HOSTLIST]\n"
               "       scontrol hold|release|requeue|requeuehold|suspend|resume JOBID[,JOBID...]...\n\n"
               "corrald's jobs as Slurm's scontrol shows and changes them; words may be abbreviated\n"
               "as Slurm's (show part, show conf). See corral-slurm(7).\n");
}

/* Slurm's matching of scontrol's words: tag is word, or its beginning at least min
 * characters long, in any case (Slurm's xstrncasecmp(tag, word, MAX(len, min))). */
static bool word_is(const char *tag, size_t tag_len, const char *word, size_t min) {
        size_t n = strlen(word);

        return tag_len >= MIN(min, n) && tag_len <= n && strncasecmp(tag, word, tag_len) == 0;
}

/* As Slurm's: an unknown or malformed id is the same message with the exit status 1. */
static int invalid_job_id(const char *subject) {
        fprintf(stderr, "%s error: Invalid job id specified\n", subject);
        return 1;
}

static int show_jobs(Cli *cli, const char *which, bool oneliner) {
        _cleanup_(job_list_done) JobList l = {};
        _cleanup_free_ JobRef *refs = NULL;
        size_t n_refs = 0, shown = 0;
        time_t now = time(NULL);
        int r;

        if (which && slurm_parse_job_list(which, &refs, &n_refs) < 0)
                return invalid_job_id("scontrol_print_job");
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
        if (n_refs > 0 && shown == 0)
                return invalid_job_id("slurm_load_jobs");
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

static int show_hostnames(const char *list) {
        _cleanup_strv_free_ char **hosts = NULL;
        int r;

        /* Slurm's exit status is 0 for both errors too. */
        list = list ?: getenv("SLURM_NODELIST");
        if (!list) {
                slurm_error("host list is empty");
                return 0;
        }
        r = slurm_hostlist_expand(list, &hosts, NULL);
        if (r == -ENOMEM)
                return cli_oom();
        if (r == -E2BIG) {
                slurm_error("Host list %s has more than %u names or a name longer than %u characters", list,
                            SLURM_HOSTLIST_HOSTS_MAX, SLURM_HOSTLIST_NAME_MAX);
                return 1;
        }
        if (r < 0) {
                fprintf(stderr, "Invalid hostlist: %s\n", list);
                return 0;
        }
        STRV_FOREACH(h, hosts)
                puts(*h);
        return fflush(stdout) == 0 ? 0 : 1;
}

/* Slurm's words for corrald's refusals of a job action: "%s for job %s". */
static const char *slurm_action_error(const Reply *reply, const JobInfo *j) {
        if (streq(reply->error, CORRAL_ERROR_NAME("NoSuchJob")))
                return "Invalid job id specified";
        if (streq(reply->error, CORRAL_ERROR_NAME("PermissionDenied")))
                return "Access/permission denied";
        if (streq(reply->error, CORRAL_ERROR_NAME("InvalidState")) && job_state_name_is_final(j->state))
                return "Job/step already completing or completed";
        return NULL;
}

static int job_action(Cli *cli, const char *verb, bool hold, int argc, char **argv) {
        _cleanup_(job_list_done) JobList l = {};
        _cleanup_strv_free_ char **ids = NULL;
        CorralMethod method = streq(verb, "hold")      ? CORRAL_METHOD_HOLD
                              : streq(verb, "release") ? CORRAL_METHOD_RELEASE
                              : streq(verb, "suspend") ? CORRAL_METHOD_SUSPEND
                              : streq(verb, "resume")  ? CORRAL_METHOD_RESUME
                                                       : CORRAL_METHOD_REQUEUE;
        int status = 0, r;

        for (int i = 0; i < argc; i++) {
                _cleanup_strv_free_ char **parts = NULL;
                if (strv_split(argv[i], ",", &parts) < 0)
                        return cli_oom();
                STRV_FOREACH(s, parts) {
                        const char *id = *s;
                        /* "JobId=42", "Job=42", as Slurm takes them. */
                        if (strncasecmp(id, "jobid=", 6) == 0)
                                id += 6;
                        else if (strncasecmp(id, "job=", 4) == 0)
                                id += 4;
                        if (!isempty(id) && strv_extend(&ids, id) < 0)
                                return cli_oom();
                }
        }
        if (strv_length(ids) == 0) {
                slurm_error("Invalid job id specified");
                return 1;
        }
        r = slurm_list_jobs(cli, NULL, false, &l);
        if (r != 0)
                return r;
        cli->verb = verb;
        STRV_FOREACH(s, ids) {
                JobRef ref;
                bool found = false;

                if (job_ref_parse(*s, &ref) < 0) {
                        fprintf(stderr, "Invalid job id specified for job %s\n", *s);
                        status = 1;
                        continue;
                }
                for (size_t i = 0; i < l.n; i++) {
                        const JobInfo *j = &l.items[i].info;
                        _cleanup_(reply_done) Reply reply = {};
                        _cleanup_json_ json_object *p = NULL;
                        const char *msg;

                        if (!slurm_job_matches_refs(j, &ref, 1))
                                continue;
                        found = true;
                        p = json_job_id(j->id);
                        if (!p || (hold && json_add_bool(p, "hold", true) < 0))
                                return cli_oom();
                        r = cli_call(cli, method, TAKE_PTR(p), &reply);
                        if (r < 0)
                                return cli_exit_status_from_errno(r);
                        if (!reply.error)
                                continue;
                        status = 1;
                        msg = slurm_action_error(&reply, j);
                        if (msg)
                                fprintf(stderr, "%s for job %s\n", msg, *s);
                        else {
                                /* Corral's own reason, in Slurm's form. */
                                _cleanup_free_ char *m = cli_error_message(NULL, NULL, &reply);
                                fprintf(stderr, "%s for job %" PRIu64 "\n", m ?: reply.error, j->id);
                        }
                }
                if (!found) {
                        fprintf(stderr, "Invalid job id specified for job %s\n", *s);
                        status = 1;
                }
        }
        return status;
}

static bool is_oneliner(const char *a) {
        return streq(a, "-o") || streq(a, "--oneliner");
}

static int run(int argc, char *argv[]) {
        _cleanup_(cli_done) Cli cli;
        bool oneliner = false;
        const char *what, *tag;
        size_t tag_len, what_len;
        int i = 1, r;

        slurm_setup("scontrol", &cli, "error");
        /* -M/--clusters anywhere (Open OnDemand appends "-M CLUSTER" to its commands): taken
         * out of the words, the name checked. */
        for (int k = 1, w = 1; k <= argc; k++) {
                const char *v = NULL;

                if (k == argc) {
                        argc = w;
                        argv[argc] = NULL;
                        break;
                }
                if ((streq(argv[k], "-M") || streq(argv[k], "--clusters") || streq(argv[k], "--cluster")) &&
                    k + 1 < argc)
                        v = argv[++k];
                else if (strncmp(argv[k], "--clusters=", 11) == 0 || strncmp(argv[k], "--cluster=", 10) == 0)
                        v = strchr(argv[k], '=') + 1;
                else if (strncmp(argv[k], "-M", 2) == 0 && argv[k][2])
                        v = argv[k] + 2;
                if (v) {
                        r = slurm_check_clusters(&cli, v, NULL);
                        if (r != 0)
                                return r;
                        continue;
                }
                argv[w++] = argv[k];
        }
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
        tag = argv[i];
        tag_len = strlen(tag);
        if (word_is(tag, tag_len, "show", 3)) {
                const char *val = NULL;

                i++;
                while (i < argc && argv[i][0] == '-') /* "show jobid -dd 42" */
                        /* Not "oneliner || is_oneliner(argv[i++])": i must move on. */
                        if (is_oneliner(argv[i++]))
                                oneliner = true;
                if (i >= argc) {
                        fprintf(stderr, "too few arguments for keyword:%s\n", tag);
                        return 1;
                }
                what = argv[i++];
                while (i < argc && argv[i][0] == '-')
                        if (is_oneliner(argv[i++]))
                                oneliner = true;
                if (i + 1 < argc) {
                        fprintf(stderr, "too many arguments for keyword:%s\n", tag);
                        return 1;
                }
                /* "show job=42" as "show job 42". */
                what_len = strcspn(what, "=");
                if (what[what_len] == '=')
                        val = what + what_len + 1;
                else if (i < argc)
                        val = argv[i];
                if (word_is(what, what_len, "hostnames", 5))
                        return show_hostnames(val);
                if (word_is(what, what_len, "jobs", 1) || word_is(what, what_len, "jobid", 1))
                        return show_jobs(&cli, val, oneliner);
                if (word_is(what, what_len, "nodes", 1))
                        return show_node(&cli, val, oneliner);
                if (word_is(what, what_len, "partitions", 2) || word_is(what, what_len, "partitionname", 2))
                        return show_partitions(&cli, val, oneliner);
                /* Slurm's config has no one-line form: -o is ignored, as there. */
                if (word_is(what, what_len, "config", 1))
                        return show_config(&cli);
                slurm_error("show %s: not supported by Corral (job, partition, node, config, hostnames; see "
                            "corral-slurm(7))",
                            what);
                return 1;
        }
        /* In Slurm's order: "res" is resume, "requeueh" requeuehold. */
        if (word_is(tag, tag_len, "requeue", 3))
                return job_action(&cli, "requeue", false, argc - i - 1, argv + i + 1);
        if (strcaseeq(tag, "requeuehold"))
                return job_action(&cli, "requeue", true, argc - i - 1, argv + i + 1);
        if (strcaseeq(tag, "hold") || strcaseeq(tag, "holdu") || strcaseeq(tag, "uhold"))
                return job_action(&cli, "hold", false, argc - i - 1, argv + i + 1);
        if (word_is(tag, tag_len, "release", 3))
                return job_action(&cli, "release", false, argc - i - 1, argv + i + 1);
        if (word_is(tag, tag_len, "suspend", 2))
                return job_action(&cli, "suspend", false, argc - i - 1, argv + i + 1);
        if (word_is(tag, tag_len, "resume", 3))
                return job_action(&cli, "resume", false, argc - i - 1, argv + i + 1);
        slurm_error("%s: command not supported by Corral (see corral-slurm(7))", tag);
        return 1;
}

SLURM_MAIN(run)
