/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral-sim: replays an SWF trace through the scheduling core in virtual time. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "parse-util.h"
#include "sim.h"

static void help(void) {
        printf("Usage: corral-sim [OPTIONS] TRACE.swf\n"
               "\n"
               "Replay a Standard Workload Format trace through Corral's scheduler.\n"
               "\n"
               "  -p --policy=fcfs|easy|conservative  scheduling policy (default easy)\n"
               "  -b --backfill-order=priority|sjf    backfill candidate order (default priority)\n"
               "  -n --procs=N                        machine size (default: trace header)\n"
               "  -N --numa-nodes=N                   split the processors over N NUMA nodes\n"
               "     --gpus=N[:K,K,...]               N GPUs, spread over the nodes or on nodes K (-1: none)\n"
               "     --gpu-binding                    GPU jobs take CPUs only on their GPUs' nodes\n"
               "                                      (a job's GPUs: SWF field 19, Corral's extension)\n"
               "  -e --exact-estimates                plan with the actual run times\n"
               "  -m --missing-estimate=skip|runtime  jobs without requested time (default skip)\n"
               "  -f --filter=default|strong          input filter (strong: the published studies')\n"
               "  -s --semantics=corral|published     event handling (default corral)\n"
               "     --engine=auto|core|flat          flat count or the scheduling core (default auto)\n"
               "  -o --schedule=FILE                  write the simulated schedule as SWF\n"
               "  -c --config=FILE                    queues, projects, weights, fair-share from a corral.conf\n"
               "     --projects=DIR                   project files (default: projects.d beside --config)\n"
               "  -q --queue-map=N=QUEUE,...          queue of the jobs with field 15 N (default DefaultQueue=)\n"
               "     --project-map=N=PROJECT,...      project of the jobs with field 13 N (default gN)\n"
               "     --fair-share=yes|no              feed jobs their project's fair-share (default: with --config)\n"
               "  -j --json                           print JSON instead of a table\n"
               "  -h --help                           show this help\n");
}

static double now_sec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void print_groups(const char *what, const SimGroupStats *g, size_t n) {
        printf("\n%-16s %7s %11s %10s %10s %8s %8s %8s %7s\n", what, "jobs", "mean wait", "mean bsld",
               "max bsld", "suspend", "mean xf", "max xf", "xf<=1.25");
        for (size_t i = 0; i < n; i++)
                printf("%-16s %7zu %9.0f s %10.3f %10.3f %8zu %8.3f %8.3f %7.1f%%\n", g[i].name, g[i].jobs,
                       g[i].avg_wait, g[i].avg_bsld, g[i].max_bsld, g[i].suspensions, g[i].avg_xfactor,
                       g[i].max_xfactor, 100.0 * g[i].xfactor_ok);
}

static void print_table(const char *path, const char *policy, const SimOptions *o, const SimStats *s, double wall) {
        printf("%-22s %s\n", "trace", path);
        printf("%-22s %s (backfill order %s, %s semantics)\n", "policy", policy,
               o->backfill_order == SCHED_BACKFILL_SJF ? "sjf" : "priority",
               sim_semantics_to_string(o->semantics));
        printf("%-22s %s\n", "input filter", sim_filter_to_string(o->filter));
        printf("%-22s %u on %u NUMA node%s (%s engine)\n", "processors", s->procs, s->numa_nodes,
               s->numa_nodes == 1 ? "" : "s", sim_engine_to_string(s->engine));
        if (s->n_gpus > 0)
                printf("%-22s %u%s\n", "GPUs", s->n_gpus, o->gpu_binding ? " (enforce-binding)" : "");
        printf("%-22s %zu\n", "jobs simulated", s->simulated);
        printf("%-22s %zu (unknown %zu, no estimate %zu, too big %zu, refused %zu)\n", "jobs skipped",
               s->skipped, s->skipped_unknown, s->skipped_no_estimate, s->skipped_too_big, s->skipped_refused);
        printf("%-22s %s\n", "fair-share", o->fairshare ? "on" : "off");
        printf("%-22s %.2f s\n", "average wait", s->avg_wait);
        printf("%-22s %.3f\n", "average bounded slowdown", s->avg_bsld);
        printf("%-22s %.3f\n", "max bounded slowdown", s->max_bsld);
        printf("%-22s %.2f s\n", "average flow time", s->avg_flow);
        printf("%-22s %.0f s\n", "max flow time", s->max_flow);
        printf("%-22s %.4f\n", "utilization", s->utilization);
        if (s->n_gpus > 0)
                printf("%-22s %.4f\n", "GPU utilization", s->gpu_utilization);
        printf("%-22s %" PRIu64 " s\n", "makespan", s->makespan);
        printf("%-22s %zu\n", "scheduling passes", s->passes);
        printf("%-22s %zu\n", "most jobs waiting", s->max_pending);
        printf("%-22s %zu (%zu resumed)\n", "suspensions", s->suspensions, s->resumes);
        printf("%-22s mean %.3f, max %.3f, %.1f%% <= %.2f\n", "expansion factor", s->avg_xfactor,
               s->max_xfactor, 100.0 * s->xfactor_ok, SIM_XFACTOR_OK);
        printf("%-22s %.4f (Jain's index of the projects' mean bounded slowdown)\n", "fairness", s->jain_bsld);
        printf("%-22s %.3f s\n", "wall-clock time", wall);
        print_groups("queue", s->queues, s->n_queues);
        print_groups("project", s->projects, s->n_projects);
}

static void print_json_string(const char *s) {
        putchar('"');
        for (; *s; s++) {
                if (*s == '"' || *s == '\\')
                        printf("\\%c", *s);
                else if ((unsigned char) *s < 0x20)
                        printf("\\u%04x", (unsigned char) *s);
                else
                        putchar(*s);
        }
        putchar('"');
}

static void print_json_groups(const char *key, const SimGroupStats *g, size_t n) {
        printf(",\"%s\":[", key);
        for (size_t i = 0; i < n; i++) {
                printf("%s{\"name\":", i > 0 ? "," : "");
                print_json_string(g[i].name);
                printf(",\"jobs\":%zu,\"avg_wait\":%.6f,\"max_wait\":%.0f,\"avg_bounded_slowdown\":%.6f,"
                       "\"max_bounded_slowdown\":%.6f,\"suspensions\":%zu,\"suspended_jobs\":%zu,"
                       "\"avg_xfactor\":%.6f,\"max_xfactor\":%.6f,\"xfactor_ok\":%.6f,\"cpu_seconds\":%.0f,"
                       "\"gpu_seconds\":%.0f}",
                       g[i].jobs, g[i].avg_wait, g[i].max_wait, g[i].avg_bsld, g[i].max_bsld, g[i].suspensions,
                       g[i].suspended_jobs, g[i].avg_xfactor, g[i].max_xfactor, g[i].xfactor_ok, g[i].cpu_seconds,
                       g[i].gpu_seconds);
        }
        putchar(']');
}

static void print_json(const char *path, const char *policy, const SimOptions *o, const SimStats *s, double wall) {
        printf("{\"trace\":");
        print_json_string(path);
        printf(",\"policy\":\"%s\",\"backfill_order\":\"%s\",\"semantics\":\"%s\",\"filter\":\"%s\","
               "\"procs\":%u,\"numa_nodes\":%u,\"engine\":\"%s\","
               "\"jobs_simulated\":%zu,\"jobs_skipped\":%zu,\"jobs_skipped_unknown\":%zu,"
               "\"jobs_skipped_no_estimate\":%zu,\"jobs_skipped_too_big\":%zu,"
               "\"avg_wait\":%.6f,\"avg_bounded_slowdown\":%.6f,\"max_bounded_slowdown\":%.6f,"
               "\"avg_flow_time\":%.6f,\"max_flow_time\":%.0f,\"utilization\":%.6f,"
               "\"makespan\":%" PRIu64 ",\"passes\":%zu,\"max_waiting\":%zu,\"wall_clock_sec\":%.6f,"
               "\"jobs_skipped_refused\":%zu,\"fair_share\":%s,\"suspensions\":%zu,\"resumes\":%zu,"
               "\"avg_xfactor\":%.6f,\"max_xfactor\":%.6f,\"xfactor_ok\":%.6f,\"jain_bounded_slowdown\":%.6f",
               policy, o->backfill_order == SCHED_BACKFILL_SJF ? "sjf" : "priority",
               sim_semantics_to_string(o->semantics), sim_filter_to_string(o->filter), s->procs, s->numa_nodes,
               sim_engine_to_string(s->engine), s->simulated, s->skipped, s->skipped_unknown, s->skipped_no_estimate, s->skipped_too_big, s->avg_wait, s->avg_bsld,
               s->max_bsld, s->avg_flow, s->max_flow, s->utilization, s->makespan, s->passes, s->max_pending, wall,
               s->skipped_refused, o->fairshare ? "true" : "false", s->suspensions, s->resumes, s->avg_xfactor,
               s->max_xfactor, s->xfactor_ok, s->jain_bsld);
        printf(",\"gpus\":%u,\"gpu_binding\":%s,\"gpu_utilization\":%.6f", s->n_gpus,
               o->gpu_binding ? "true" : "false", s->gpu_utilization);
        print_json_groups("queues", s->queues, s->n_queues);
        print_json_groups("projects", s->projects, s->n_projects);
        printf("}\n");
}

/* The trace again, with the simulated waits, and a note saying how they were made. */
static int write_schedule(const char *trace_path, const SwfTrace *t, const SimJobResult *results,
                          const SimOptions *o, const SimStats *st, const char *path, char **ret_error) {
        _cleanup_free_ char *note = NULL;
        FILE *in, *out;
        int r;

        if (asprintf(&note,
                     "; Note: schedule simulated by corral-sim: policy %s, backfill order %s, %s semantics,\n"
                     ";       %s input filter, %u processors. Field 3 is the simulated wait, field 4 the\n"
                     ";       run time simulated, time suspended included; the %zu jobs the simulation\n"
                     ";       skipped are left out.\n",
                     o->policy->name, o->backfill_order == SCHED_BACKFILL_SJF ? "sjf" : "priority",
                     sim_semantics_to_string(o->semantics), sim_filter_to_string(o->filter), st->procs,
                     st->skipped) < 0)
                return -ENOMEM;
        in = fopen(trace_path, "re");
        if (!in)
                return -errno;
        out = fopen(path, "we");
        if (!out) {
                r = -errno;
                fclose(in);
                return r;
        }
        r = sim_write_schedule(in, trace_path, t, results, note, out, ret_error);
        fclose(in);
        if (fclose(out) != 0 && r >= 0)
                r = -errno;
        return r;
}

/* The configuration as corrald would read it from FILE's directory: FILE, FILE.d/ and
 * projects.d/ beside it (or projects_dir); without FILE the daemon's defaults. */
static int load_config(const char *file, const char *projects_dir, Config **ret, char **ret_error) {
        _cleanup_free_ char *dropdir = NULL, *copy = NULL, *pdir = NULL;

        if (!file)
                return config_load_paths(NULL, NULL, projects_dir, ret, ret_error);
        /* corrald takes a missing corral.conf for defaults; a file named here must exist. */
        if (access(file, R_OK) < 0) {
                int r = -errno;
                if (asprintf(ret_error, "%s: %s", file, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        if (asprintf(&dropdir, "%s.d", file) < 0 || !(copy = strdup(file)) ||
            (!projects_dir && asprintf(&pdir, "%s/projects.d", dirname(copy)) < 0))
                return -ENOMEM;
        return config_load_paths(file, dropdir, projects_dir ?: pdir, ret, ret_error);
}

static int parse_map(const char *opt, const char *arg, SimMap **m, size_t *n) {
        _cleanup_free_ char *err = NULL;
        int r;

        sim_map_free(*m, *n);
        *m = NULL;
        *n = 0;
        r = sim_map_parse(arg, m, n, &err);
        if (r < 0)
                fprintf(stderr, "corral-sim: --%s: %s\n", opt, err ?: strerror(-r));
        return r;
}

int main(int argc, char *argv[]) {
        enum {
                ARG_PROJECTS = 0x100,
                ARG_PROJECT_MAP,
                ARG_FAIR_SHARE,
                ARG_GPUS,
                ARG_GPU_BINDING,
                ARG_ENGINE,
        };
        static const struct option options[] = {
                { "policy",           required_argument, NULL, 'p' },
                { "backfill-order",   required_argument, NULL, 'b' },
                { "procs",            required_argument, NULL, 'n' },
                { "numa-nodes",       required_argument, NULL, 'N' },
                { "gpus",             required_argument, NULL, ARG_GPUS },
                { "gpu-binding",      no_argument,       NULL, ARG_GPU_BINDING },
                { "exact-estimates",  no_argument,       NULL, 'e' },
                { "missing-estimate", required_argument, NULL, 'm' },
                { "filter",           required_argument, NULL, 'f' },
                { "semantics",        required_argument, NULL, 's' },
                { "engine",           required_argument, NULL, ARG_ENGINE },
                { "schedule",         required_argument, NULL, 'o' },
                { "config",           required_argument, NULL, 'c' },
                { "projects",         required_argument, NULL, ARG_PROJECTS },
                { "queue-map",        required_argument, NULL, 'q' },
                { "project-map",      required_argument, NULL, ARG_PROJECT_MAP },
                { "fair-share",       required_argument, NULL, ARG_FAIR_SHARE },
                { "json",             no_argument,       NULL, 'j' },
                { "help",             no_argument,       NULL, 'h' },
                {}
        };
        SimOptions o = {};
        SwfTrace trace = {};
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ SimJobResult *results = NULL;
        _cleanup_free_ int *gpu_nodes = NULL;
        _cleanup_(config_freep) Config *config = NULL;
        const char *schedule = NULL, *config_file = NULL, *projects_dir = NULL;
        SimMap *queue_map = NULL, *project_map = NULL;
        size_t n_queue_map = 0, n_project_map = 0;
        bool json = false, backfill_given = false;
        int fair_share = -1;
        SimStats st;
        double t0, wall;
        unsigned u;
        int c, r;

        while ((c = getopt_long(argc, argv, "p:b:n:N:em:f:s:o:c:q:jh", options, NULL)) >= 0)
                switch (c) {
                case 'p':
                        o.policy = sched_policy_from_name(optarg);
                        if (!o.policy) {
                                fprintf(stderr, "corral-sim: unknown policy \"%s\" (fcfs, easy, conservative)\n", optarg);
                                return EXIT_FAILURE;
                        }
                        break;
                case 'b':
                        if (streq(optarg, "priority"))
                                o.backfill_order = SCHED_BACKFILL_PRIORITY;
                        else if (streq(optarg, "sjf"))
                                o.backfill_order = SCHED_BACKFILL_SJF;
                        else {
                                fprintf(stderr, "corral-sim: unknown backfill order \"%s\" (priority, sjf)\n", optarg);
                                return EXIT_FAILURE;
                        }
                        backfill_given = true;
                        break;
                case 'n':
                case 'N':
                        if (safe_atou(optarg, &u) < 0 || u == 0) {
                                fprintf(stderr, "corral-sim: --%s wants a positive number, not \"%s\"\n",
                                        c == 'n' ? "procs" : "numa-nodes", optarg);
                                return EXIT_FAILURE;
                        }
                        if (c == 'n')
                                o.procs = u;
                        else
                                o.numa_nodes = u;
                        break;
                case ARG_GPUS:
                        free(gpu_nodes);
                        gpu_nodes = NULL;
                        r = sim_gpus_parse(optarg, &o.n_gpus, &gpu_nodes, &err);
                        if (r < 0) {
                                fprintf(stderr, "corral-sim: --gpus: %s\n", err ?: strerror(-r));
                                return EXIT_FAILURE;
                        }
                        o.gpu_nodes = gpu_nodes;
                        break;
                case ARG_GPU_BINDING:
                        o.gpu_binding = true;
                        break;
                case 'e':
                        o.exact_estimates = true;
                        break;
                case 'm':
                        if (streq(optarg, "skip"))
                                o.missing_estimate_runtime = false;
                        else if (streq(optarg, "runtime"))
                                o.missing_estimate_runtime = true;
                        else {
                                fprintf(stderr, "corral-sim: --missing-estimate wants skip or runtime, not \"%s\"\n", optarg);
                                return EXIT_FAILURE;
                        }
                        break;
                case 'f':
                        o.filter = sim_filter_from_string(optarg);
                        if (o.filter < 0) {
                                fprintf(stderr, "corral-sim: --filter wants default or strong, not \"%s\"\n", optarg);
                                return EXIT_FAILURE;
                        }
                        break;
                case 's':
                        o.semantics = sim_semantics_from_string(optarg);
                        if (o.semantics < 0) {
                                fprintf(stderr, "corral-sim: --semantics wants corral or published, not \"%s\"\n", optarg);
                                return EXIT_FAILURE;
                        }
                        break;
                case ARG_ENGINE:
                        o.engine = sim_engine_from_string(optarg);
                        if (o.engine < 0) {
                                fprintf(stderr, "corral-sim: --engine wants auto, core or flat, not \"%s\"\n", optarg);
                                return EXIT_FAILURE;
                        }
                        break;
                case 'o':
                        schedule = optarg;
                        break;
                case 'c':
                        config_file = optarg;
                        break;
                case ARG_PROJECTS:
                        projects_dir = optarg;
                        break;
                case 'q':
                        if (parse_map("queue-map", optarg, &queue_map, &n_queue_map) < 0)
                                return EXIT_FAILURE;
                        break;
                case ARG_PROJECT_MAP:
                        if (parse_map("project-map", optarg, &project_map, &n_project_map) < 0)
                                return EXIT_FAILURE;
                        break;
                case ARG_FAIR_SHARE:
                        fair_share = parse_boolean(optarg);
                        if (fair_share < 0) {
                                fprintf(stderr, "corral-sim: --fair-share wants yes or no, not \"%s\"\n", optarg);
                                return EXIT_FAILURE;
                        }
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                default:
                        return EXIT_FAILURE;
                }

        if (optind != argc - 1) {
                fprintf(stderr, "corral-sim: expected one trace file (see --help)\n");
                return EXIT_FAILURE;
        }

        r = load_config(config_file, projects_dir, &config, &err);
        if (r < 0) {
                fprintf(stderr, "corral-sim: %s\n", err ?: strerror(-r));
                return EXIT_FAILURE;
        }
        /* The configuration's policy, unless the command line names one. */
        if (!o.policy)
                o.policy = config->policy ? sched_policy_from_name(config->policy) : &sched_policy_easy;
        if (!backfill_given && config->backfill_order && streq(config->backfill_order, "sjf"))
                o.backfill_order = SCHED_BACKFILL_SJF;
        o.config = config;
        o.queue_map = queue_map;
        o.n_queue_map = n_queue_map;
        o.project_map = project_map;
        o.n_project_map = n_project_map;
        o.fairshare = fair_share >= 0 ? fair_share : !!config_file;

        t0 = now_sec();
        r = swf_load(argv[optind], &trace, &err);
        if (r < 0) {
                fprintf(stderr, "corral-sim: %s\n", err ?: strerror(-r));
                return EXIT_FAILURE;
        }
        if (schedule) {
                results = new(SimJobResult, MAX(trace.n_jobs, (size_t) 1));
                if (!results) {
                        fprintf(stderr, "corral-sim: %s\n", strerror(ENOMEM));
                        return EXIT_FAILURE;
                }
                o.results = results;
        }
        r = sim_run(&trace, &o, &st, &err);
        if (r < 0) {
                swf_trace_done(&trace);
                fprintf(stderr, "corral-sim: %s: %s\n", argv[optind], err ?: strerror(-r));
                return EXIT_FAILURE;
        }
        wall = now_sec() - t0;
        if (schedule) {
                r = write_schedule(argv[optind], &trace, results, &o, &st, schedule, &err);
                if (r < 0) {
                        swf_trace_done(&trace);
                        fprintf(stderr, "corral-sim: %s: %s\n", schedule, err ?: strerror(-r));
                        return EXIT_FAILURE;
                }
        }
        swf_trace_done(&trace);

        if (json)
                print_json(argv[optind], o.policy->name, &o, &st, wall);
        else
                print_table(argv[optind], o.policy->name, &o, &st, wall);
        sim_stats_done(&st);
        sim_map_free(queue_map, n_queue_map);
        sim_map_free(project_map, n_project_map);
        return EXIT_SUCCESS;
}
