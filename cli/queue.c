/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral queue (squeue's columns, grouped as Maui's showq) and corral show (scontrol
 * show job's content, one "Key: value" per line). */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <langinfo.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "log.h"
#include "parse-util.h"
#include "strv.h"
#include "table.h"
#include "text-util.h"

static int cmp_u64(uint64_t a, uint64_t b) {
        return a < b ? -1 : a > b;
}

/* Within a section: active jobs by start, eligible ones in the order the scheduler will
 * consider them (priority, then estimated start), the rest by id. */
static int job_entry_compare(const void *pa, const void *pb) {
        const JobEntry *a = pa, *b = pb;
        QueueSection sa = queue_section_of_state(a->info.state), sb = queue_section_of_state(b->info.state);
        int c;

        if (sa != sb)
                return sa < sb ? -1 : 1;
        if (sa == QUEUE_SECTION_ACTIVE && (c = cmp_u64(a->info.start_time, b->info.start_time)) != 0)
                return c;
        if (sa == QUEUE_SECTION_ELIGIBLE) {
                if (a->has_priority && b->has_priority && a->priority != b->priority)
                        return a->priority > b->priority ? -1 : 1;
                if (a->has_est_start != b->has_est_start)
                        return a->has_est_start ? -1 : 1;
                if (a->has_est_start && (c = cmp_u64(a->est_start, b->est_start)) != 0)
                        return c;
        }
        return cmp_u64(a->info.id, b->info.id);
}

void queue_sort(JobEntry *jobs, size_t n) {
        if (n > 1)
                qsort(jobs, n, sizeof(JobEntry), job_entry_compare);
}

static bool utf8_output(void) {
        const char *cs = nl_langinfo(CODESET);
        return cs && streq(cs, "UTF-8");
}

int queue_print(FILE *f, JobEntry *jobs, size_t n, time_t now, unsigned show_sections, unsigned flags) {
        /* GPUS only when a listed job asks for GPUs: a machine without any keeps its
         * columns. --long: what each of the user's own jobs was charged (or so far,
         * while it runs), as sacct's CPUTime/TotalCPU/MaxRSS would tell it; blank where
         * the daemon sends no charge (other users' jobs, jobs that never ran). */
        enum {
                COL_JOBID, COL_NAME, COL_USER, COL_PROJECT, COL_QUEUE, COL_STATE, COL_TIME, COL_CPUS, COL_GPUS,
                COL_GPU_UTIL, COL_MEM, COL_START, COL_COREH, COL_SU, COL_EFF, COL_MAXMEM, COL_WHERE, _COL_MAX
        };
        static const char *const names[_COL_MAX] = {
                "JOBID", "NAME", "USER", "PROJECT", "QUEUE", "STATE", "TIME", "CPUS", "GPUS", "GPU%", "MEM", "START",
                "CORE-H", "SU", "CPU-EFF", "MAXMEM", "NODELIST(REASON)",
        };
        bool utf8 = flags & QUEUE_PRINT_UTF8, long_format = flags & QUEUE_PRINT_LONG, gpus_shown = false,
             gpu_util_shown = false;
        _cleanup_table_ Table *t = NULL;
        size_t first[_QUEUE_SECTION_MAX + 1] = {}, cpus[_QUEUE_SECTION_MAX] = {}, gpus[_QUEUE_SECTION_MAX] = {};
        const char *headers[_COL_MAX + 1];
        int column[_COL_MAX];
        size_t n_columns = 0;
        bool any_interactive = false, any_gpu_idle = false;
        int r;

        /* GPU% only where telemetry read a listed job's GPUs. */
        for (size_t i = 0; i < n; i++) {
                gpus_shown = gpus_shown || jobs[i].info.gpus > 0 || jobs[i].info.shards > 0;
                gpu_util_shown = gpu_util_shown || jobs[i].info.gpu_util >= 0;
        }
        for (int c = 0; c < _COL_MAX; c++) {
                column[c] = -1;
                if ((c == COL_GPUS && !gpus_shown) || (c == COL_GPU_UTIL && !gpu_util_shown) || (!long_format && c >= COL_COREH && c <= COL_MAXMEM))
                        continue;
                column[c] = (int) n_columns;
                headers[n_columns++] = names[c];
        }
        headers[n_columns] = NULL;

        queue_sort(jobs, n);

        t = table_new(headers);
        if (!t)
                return -ENOMEM;
        for (int c = 0; c < _COL_MAX; c++)
                if (column[c] >= 0 && (c == COL_JOBID || (c >= COL_TIME && c <= COL_MEM) ||
                                       (c >= COL_COREH && c <= COL_MAXMEM)))
                        table_set_align_right(t, (size_t) column[c], true);
        table_set_max_width(t, COL_NAME, 24);
        if (utf8)
                table_set_ellipsis(t, "…");

        for (size_t i = 0; i < n; i++) {
                const JobEntry *e = &jobs[i];
                const JobInfo *j = &e->info;
                QueueSection s = queue_section_of_state(j->state);
                char id[32], elapsed[32], ncpus[16], ngpus[24], mem[16], start[32], where[1100], state[80];
                char coreh[32] = "", su[32] = "", eff[16] = "", maxmem[16] = "", gpu_util[16] = "";
                const char *row[_COL_MAX], *cells[_COL_MAX + 1];
                size_t m = 0;

                snprintf(id, sizeof(id), "%" PRIu64, j->id);
                /* Interactive jobs (corral run, srun --pty, salloc): marked, and explained
                 * under the tables. */
                snprintf(state, sizeof(state), "%s%s", strempty(j->state), j->interactive ? "*" : "");
                any_interactive = any_interactive || j->interactive;
                any_gpu_idle = any_gpu_idle || j->gpu_idle_sec > 0;
                format_elapsed(elapsed, sizeof(elapsed), job_elapsed(j, now));
                snprintf(ncpus, sizeof(ncpus), "%u", j->cpus);
                /* A shard job: its shards of one GPU, as --gres writes them. */
                if (j->shards > 0)
                        snprintf(ngpus, sizeof(ngpus), "shard:%u", j->shards);
                else
                        snprintf(ngpus, sizeof(ngpus), "%u", j->gpus);
                if (j->gpu_util >= 0)
                        snprintf(gpu_util, sizeof(gpu_util), "%d%%", j->gpu_util);
                if (j->memory > 0)
                        format_size(mem, sizeof(mem), j->memory);
                else
                        mem[0] = 0;
                if (s == QUEUE_SECTION_ELIGIBLE && e->has_est_start)
                        format_start_estimate(start, sizeof(start), e->est_start, now);
                else if (s != QUEUE_SECTION_ELIGIBLE && s != QUEUE_SECTION_BLOCKED && j->start_time > 0)
                        format_short_time(start, sizeof(start), j->start_time, now);
                else
                        start[0] = 0;
                if (s == QUEUE_SECTION_ACTIVE)
                        snprintf(where, sizeof(where), "%s%s", strempty(j->node), j->gpu_idle_sec > 0 ? " IDLE-GPU" : "");
                else if (!isempty(j->reason))
                        snprintf(where, sizeof(where), "(%s)", j->reason);
                else
                        where[0] = 0;

                if (long_format && e->charge.set) {
                        snprintf(coreh, sizeof(coreh), "%.2f", e->charge.core_hours);
                        snprintf(su, sizeof(su), "%.2f", e->charge.service_units);
                        if (e->charge.run_usec > 0)
                                snprintf(eff, sizeof(eff), "%.0f%%", 100.0 * e->charge.efficiency);
                        if (e->charge.memory_peak > 0)
                                format_size(maxmem, sizeof(maxmem), e->charge.memory_peak);
                }
                row[COL_JOBID] = id, row[COL_NAME] = j->name, row[COL_USER] = j->user;
                row[COL_PROJECT] = j->project, row[COL_QUEUE] = j->queue, row[COL_STATE] = state;
                row[COL_TIME] = elapsed, row[COL_CPUS] = ncpus, row[COL_GPUS] = j->gpus > 0 || j->shards > 0 ? ngpus : "";
                row[COL_GPU_UTIL] = gpu_util;
                row[COL_MEM] = mem, row[COL_START] = start, row[COL_COREH] = coreh, row[COL_SU] = su;
                row[COL_EFF] = eff, row[COL_MAXMEM] = maxmem, row[COL_WHERE] = where;
                for (int c = 0; c < _COL_MAX; c++)
                        if (column[c] >= 0)
                                cells[m++] = row[c];
                cells[m] = NULL;
                r = table_add_row(t, cells);
                if (r < 0)
                        return r;
                cpus[s] += j->cpus;
                gpus[s] += j->gpus;
                for (QueueSection k = s + 1; k <= _QUEUE_SECTION_MAX; k++)
                        first[k] = i + 1;
        }

        for (QueueSection s = 0; s < _QUEUE_SECTION_MAX; s++) {
                size_t count = first[s + 1] - first[s];
                const char *name = queue_section_name(s);

                if (count == 0 && !(show_sections & (1U << s)))
                        continue;
                fprintf(f, "%s jobs", name);
                for (size_t k = strlen(name) + 5; k < 40; k++)
                        fputc('-', f);
                fputc('\n', f);
                if (count > 0) {
                        r = table_print(t, f, true, first[s], first[s + 1]);
                        if (r < 0)
                                return r;
                }
                fprintf(f, "\n%zu %s job%s", count, name, count == 1 ? "" : "s");
                if (s == QUEUE_SECTION_ACTIVE)
                        fprintf(f, " using %zu CPU%s", cpus[s], cpus[s] == 1 ? "" : "s");
                if (s == QUEUE_SECTION_ACTIVE && gpus[s] > 0)
                        fprintf(f, " and %zu GPU%s", gpus[s], gpus[s] == 1 ? "" : "s");
                fputs("\n\n", f);
        }
        if (any_interactive)
                fputs("*: an interactive job (corral run, srun --pty, salloc)\n\n", f);
        if (any_gpu_idle)
                fputs("IDLE-GPU: every GPU the job holds has been idle for GPUIdleSec= (corral why JOBID)\n\n", f);
        fprintf(f, "Total jobs: %zu\n", n);
        return ferror(f) ? -EIO : 0;
}

static void queue_help(void) {
        printf("Usage: corral queue [OPTIONS]\n"
               "       corral jobs [OPTIONS]\n\n"
               "List the jobs that are running (active), waiting to be scheduled (eligible), and\n"
               "held or blocked by policy (blocked). START is when a job started, or for\n"
               "eligible jobs when the scheduler expects to start it.\n\n"
               "Options:\n"
               "  -u, --user USER        only jobs of USER\n"
               "      --me               only your own jobs\n"
               "  -t, --state STATES     only jobs in these states, e.g. RUNNING,HELD or R,PD\n"
               "                         (finished states too: COMPLETED, FAILED, CD, F, ...)\n"
               "  -p, --project PROJECT  only jobs of PROJECT (also -A, --account)\n"
               "  -q, --queue QUEUE      only jobs in QUEUE (also --partition)\n"
               "  -a, --all              also recently finished jobs\n"
               "  -l, --long             also what your jobs were charged: core-hours, service\n"
               "                         units, CPU efficiency and memory peak\n"
               "      --json             print the reply as JSON\n"
               "      --limit N          at most N jobs (with --json: its \"next_after_id\" says\n"
               "                         where the next page starts)\n"
               "      --after ID         only jobs after job ID, in the order of their ids\n"
               "  -h, --help             show this help\n");
}

int verb_queue(Cli *cli, int argc, char **argv) {
        enum { ARG_ME = 0x100, ARG_JSON, ARG_LIMIT, ARG_AFTER };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, ARG_JSON },
                { "user", required_argument, NULL, 'u' },
                { "me", no_argument, NULL, ARG_ME },
                { "state", required_argument, NULL, 't' },
                { "states", required_argument, NULL, 't' },
                { "project", required_argument, NULL, 'p' },
                { "account", required_argument, NULL, 'A' },
                { "queue", required_argument, NULL, 'q' },
                { "partition", required_argument, NULL, 'q' },
                { "all", no_argument, NULL, 'a' },
                { "long", no_argument, NULL, 'l' },
                { "limit", required_argument, NULL, ARG_LIMIT },
                { "after", required_argument, NULL, ARG_AFTER },
                {},
        };
        _cleanup_strv_free_ char **states = NULL;
        _cleanup_free_ char *user = NULL;
        _cleanup_(job_list_done) JobList l = {};
        _cleanup_(reply_done) Reply reply = {};
        const char *project = NULL, *queue = NULL;
        bool all = false, retried = false;
        uint64_t limit = 0, after = 0;
        unsigned show = 0, flags = 0;
        json_object *next;
        size_t kept = 0;
        int c, r;

        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, "hu:t:p:A:q:al", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        queue_help();
                        return CLI_EXIT_SUCCESS;
                case ARG_JSON:
                        cli->json = true;
                        break;
                case 'u':
                case ARG_ME:
                        free(user);
                        if (c == 'u')
                                user = strdup(optarg);
                        else {
                                struct passwd *pw = getpwuid(getuid());
                                if (!pw) {
                                        log_error("queue: --me: cannot find the name of uid %u", (unsigned) getuid());
                                        return CLI_EXIT_FAILURE;
                                }
                                user = strdup(pw->pw_name);
                        }
                        if (!user)
                                return cli_oom();
                        break;
                case 't': {
                        _cleanup_free_ char *bad = NULL;
                        states = strv_free(states);
                        r = job_states_parse(optarg, &states, &bad);
                        if (r == -ENOMEM)
                                return cli_oom();
                        if (r < 0) {
                                log_error("queue: unknown state '%s' (e.g. PENDING, RUNNING, HELD, COMPLETED, "
                                          "or PD, R, CD, or all)", strempty(bad));
                                return CLI_EXIT_USAGE;
                        }
                        break;
                }
                case 'p':
                case 'A':
                        project = optarg;
                        break;
                case 'q':
                        queue = optarg;
                        break;
                case 'a':
                        all = true;
                        break;
                case 'l':
                        flags |= QUEUE_PRINT_LONG;
                        break;
                case ARG_LIMIT:
                        if (safe_atou64(optarg, &limit) < 0 || limit == 0 || limit > CORRAL_LIST_JOBS_MAX) {
                                log_error("queue: --limit '%s': a number of jobs, 1 to %u", optarg,
                                          CORRAL_LIST_JOBS_MAX);
                                return CLI_EXIT_USAGE;
                        }
                        break;
                case ARG_AFTER:
                        if (safe_atou64(optarg, &after) < 0 || after > CORRAL_JOB_ID_MAX) {
                                log_error("queue: --after '%s': a job id", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        break;
                default:
                        log_error("queue: see corral queue --help");
                        return CLI_EXIT_USAGE;
                }
        if (optind < argc) {
                log_error("queue: unexpected argument '%s' (to see one job: corral show %s)", argv[optind],
                          argv[optind]);
                return CLI_EXIT_USAGE;
        }
        if (all && !states && !(states = strv_copy((char **) cli_job_states)))
                return cli_oom();

        for (;;) {
                _cleanup_json_ json_object *f = json_object_new_object();

                if (!f || json_add_string(f, "user", user) < 0 || json_add_strv(f, "states", states) < 0 ||
                    ((flags & QUEUE_PRINT_LONG) && json_add_bool(f, "charges", true) < 0) ||
                    json_add_string(f, "queue", queue) < 0 || (!retried && json_add_string(f, "project", project) < 0))
                        return cli_oom();
                reply_done(&reply);
                r = cli_call_list_page(cli, TAKE_PTR(f), after, limit, &reply);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                /* "project" came after the first protocol version: a daemon that refuses it
                 * still lists, and we filter here. */
                if (reply.error && project && !retried &&
                    corral_error_from_string(reply.error) == CORRAL_ERROR_INVALID_PARAMETER) {
                        json_object *p;
                        if (json_object_object_get_ex(reply.parameters, CORRAL_FIELD_PARAMETER, &p) &&
                            streq_ptr(json_object_get_string(p), "project")) {
                                retried = true;
                                continue;
                        }
                }
                break;
        }
        if (reply.error)
                return cli_report_error(cli, NULL, &reply);
        if (cli->json)
                return cli_print_json_status(reply.parameters);

        r = job_list_from_reply(reply.parameters, &l);
        if (r == -ENOMEM)
                return cli_oom();
        if (r < 0) {
                log_error("queue: corrald sent a job list this corral cannot read (are corral and corrald the "
                          "same version? corral info)");
                return CLI_EXIT_FAILURE;
        }

        /* The daemon filters; these only matter for one that ignores a filter it does not
         * know. */
        for (size_t i = 0; i < l.n; i++) {
                const JobInfo *j = &l.items[i].info;
                bool keep = (!project || streq_ptr(j->project, project)) && (!queue || streq_ptr(j->queue, queue)) &&
                            (!user || streq_ptr(j->user, user)) && (!states || strv_contains(states, j->state));

                if (!keep) {
                        job_info_done(&l.items[i].info);
                        continue;
                }
                if (kept != i)
                        l.items[kept] = l.items[i];
                kept++;
        }
        l.n = kept;

        if (!states)
                show = (1U << QUEUE_SECTION_ACTIVE) | (1U << QUEUE_SECTION_ELIGIBLE) | (1U << QUEUE_SECTION_BLOCKED);
        if (utf8_output())
                flags |= QUEUE_PRINT_UTF8;
        r = queue_print(stdout, l.items, l.n, time(NULL), show, flags);
        if (r == -ENOMEM)
                return cli_oom();
        if (r >= 0 && json_object_object_get_ex(reply.parameters, "next_after_id", &next))
                printf("More jobs after job %s: corral queue --after %s\n", json_object_get_string(next),
                       json_object_get_string(next));
        return r < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_SUCCESS;
}

/* ---- show ---- */

static void field(FILE *f, const char *key, const char *fmt, ...) _printf_(3, 4);
static void field(FILE *f, const char *key, const char *fmt, ...) {
        va_list ap;

        /* An empty key continues the field above. */
        fprintf(f, isempty(key) ? "%16s" : "%14s: ", key);
        /* Values are the users' (names, paths, commands): escaped, whatever was stored. */
        va_start(ap, fmt);
        (void) vfprintf_escaped(f, fmt, ap);
        va_end(ap);
        fputc('\n', f);
}

int job_show_print(FILE *f, const JobEntry *e, time_t now) {
        const JobInfo *j = &e->info;
        char a[64], b[64];

        field(f, "JobId", "%" PRIu64, j->id);
        if (j->array_job_id > 0)
                field(f, "ArrayJob", "%" PRIu64 "_%" PRIu32 " (task %" PRIu32 " of array job %" PRIu64 ")",
                      j->array_job_id, j->array_task_id, j->array_task_id, j->array_job_id);
        field(f, "Name", "%s", strna(j->name));
        field(f, "User", "%s (%u)", strna(j->user), (unsigned) j->uid);
        field(f, "Project", "%s", strna(j->project));
        field(f, "Queue", "%s", strna(j->queue));
        field(f, "State", "%s", strna(j->state));
        if (j->interactive)
                field(f, "Interactive", "yes (on its submitter's terminal; not preemptable)");
        if (!isempty(j->reason))
                field(f, "Reason", "%s", j->reason);
        if (e->has_priority)
                field(f, "Priority", "%g", e->priority);
        field(f, "Nice", "%d", j->nice);
        field(f, "CPUs", "%u%s%s%s", j->cpus, j->cpus_allocated ? " (CPU " : "", strempty(j->cpus_allocated),
              j->cpus_allocated ? ")" : "");
        if (j->shards > 0)
                field(f, "Shards", "%u of one GPU%s%s%s%s (shared: its memory is not fenced)", j->shards,
                      j->gpu_type ? " of type " : "", strempty(j->gpu_type), j->gpus_allocated ? ", GPU " : "",
                      strempty(j->gpus_allocated));
        if (j->gpus > 0)
                field(f, "GPUs", "%u%s%s%s%s%s", j->gpus, j->gpu_type ? " of type " : "", strempty(j->gpu_type),
                      j->gpus_allocated ? " (GPU " : "", strempty(j->gpus_allocated), j->gpus_allocated ? ")" : "");
        field(f, "Memory", "%s", j->memory > 0 ? format_size(a, sizeof(a), j->memory) : "queue default");
        field(f, "TimeLimit", "%s",
              j->walltime_sec > 0 ? format_duration(a, sizeof(a), j->walltime_sec) : "queue default");
        field(f, "SubmitTime", "%s", format_timestamp(a, sizeof(a), j->submit_time));
        if (j->start_time > 0)
                field(f, "StartTime", "%s", format_timestamp(a, sizeof(a), j->start_time));
        else if (e->has_est_start)
                field(f, "EstStartTime", "%s (estimate)", format_timestamp(a, sizeof(a), e->est_start));
        if (j->end_time > 0)
                field(f, "EndTime", "%s", format_timestamp(a, sizeof(a), j->end_time));
        if (j->start_time > 0)
                field(f, "RunTime", "%s", format_elapsed(a, sizeof(a), job_elapsed(j, now)));
        if (j->exit_code >= 0 || j->exit_signal > 0)
                /* Slurm's "code:signal". */
                field(f, "ExitCode", "%d:%d%s%s%s", MAX(j->exit_code, 0), j->exit_signal,
                      j->exit_signal > 0 ? " (SIG" : "", j->exit_signal > 0 ? strna(signal_to_string(j->exit_signal)) : "",
                      j->exit_signal > 0 ? ")" : "");
        if (!isempty(j->node))
                field(f, "Node", "%s", j->node);
        snprintf(b, sizeof(b), "corral-job-%" PRIu64 ".scope", j->id);
        field(f, "Unit", "%s", b);

        if (!j->has_details)
                return ferror(f) ? -EIO : 0;

        if (j->has_script)
                field(f, "Command", "(batch script)");
        else if (j->argv) {
                _cleanup_free_ char *cmd = argv_to_display(j->argv);
                if (!cmd)
                        return -ENOMEM;
                field(f, "Command", "%s", cmd);
        }
        field(f, "WorkDir", "%s", strna(j->workdir));
        field(f, "StdIn", "%s", j->stdin_path ?: "/dev/null");
        field(f, "StdOut", "%s", j->stdout_path ?: "the journal (corral logs)");
        field(f, "StdErr", "%s", j->stderr_path ?: (j->stdout_path ? "with StdOut" : "the journal (corral logs)"));
        field(f, "Environment", "%zu variables (corral show --json lists them)", strv_length(j->env));
        if (e->charge.set) {
                /* The charge, with CPU time, memory and io as its cgroup gave them. */
                charge_view_print(f, &e->charge);
                field(f, "TasksPeak", "%" PRIu64, j->usage.tasks_peak);
        } else if (j->start_time > 0) {
                field(f, "CPUTime", "%s", format_elapsed(a, sizeof(a), j->usage.cpu_usec / 1000000));
                field(f, "MemoryPeak", "%s", format_size(a, sizeof(a), j->usage.memory_peak));
                field(f, "IO", "%s read, %s written", format_size(a, sizeof(a), j->usage.io_read_bytes),
                      format_size(b, sizeof(b), j->usage.io_write_bytes));
                field(f, "TasksPeak", "%" PRIu64, j->usage.tasks_peak);
        }
        return ferror(f) ? -EIO : 0;
}

/* A history event's words: corrald's event names, which a newer corrald may add to. */
static const char *history_words(const char *event) {
        static const struct {
                const char *event, *words;
        } table[] = {
                { "submit", "submitted" },  { "hold", "held" },          { "release", "released" },
                { "start", "started" },     { "suspend", "suspended" },  { "resume", "resumed" },
                { "end", "ended" },         { "cancel", "cancelled" },   { "requeue", "requeued" },
                { "node_fail", "lost" },    { "block", "blocked" },      { "unblock", "unblocked" },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (streq_ptr(event, table[i].event))
                        return table[i].words;
        return event;
}

static const char *history_by(const char *by) {
        if (streq_ptr(by, "owner"))
                return " by its owner";
        if (streq_ptr(by, "admin"))
                return " by an administrator";
        if (streq_ptr(by, "scheduler"))
                return " by the scheduler (preemption)";
        return "";
}

/* Its state changes (corrald's "history", for its owner and administrators). */
void job_history_print(FILE *f, json_object *job) {
        json_object *h, *v;

        if (!json_object_object_get_ex(job, "history", &h) || !json_object_is_type(h, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(h); i++) {
                json_object *e = json_object_array_get_idx(h, i);
                const char *state = json_object_object_get_ex(e, "state", &v) ? json_object_get_string(v) : NULL;
                const char *event = json_object_object_get_ex(e, "event", &v) ? json_object_get_string(v) : NULL;
                const char *reason = json_object_object_get_ex(e, "reason", &v) ? json_object_get_string(v) : NULL;
                const char *by = json_object_object_get_ex(e, "by", &v) ? json_object_get_string(v) : NULL;
                uint64_t t = json_object_object_get_ex(e, "time", &v) ? (uint64_t) json_object_get_int64(v) : 0;
                char a[64];

                field(f, i == 0 ? "History" : "", "%s  %-13s %s%s%s%s%s", format_timestamp(a, sizeof a, t),
                      strna(state), strna(history_words(event)), history_by(by), reason ? " (" : "", strempty(reason),
                      reason ? ")" : "");
        }
}

/* What the job did with each GPU it held, from NVML's readings (corrald's gpu_usage). */
void job_gpu_usage_print(FILE *f, json_object *job) {
        json_object *usage, *v;
        char a[32], b[32];

        if (!json_object_object_get_ex(job, "gpu_usage", &usage) || !json_object_is_type(usage, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(usage); i++) {
                json_object *e = json_object_array_get_idx(usage, i);
                bool running = json_object_object_get_ex(e, "running", &v) && json_object_get_boolean(v);
                int64_t gpu = json_object_object_get_ex(e, "gpu", &v) ? json_object_get_int64(v) : -1;
                uint64_t held = json_object_object_get_ex(e, "held_sec", &v) ? (uint64_t) json_object_get_int64(v) : 0;
                char key[32], energy[48];

                snprintf(key, sizeof key, "GPU%" PRIi64 "Usage", gpu);
                if (!json_object_object_get_ex(e, "util_mean", &v)) {
                        field(f, key, "held %s%s, not read (no GPU telemetry)", format_elapsed(a, sizeof a, held),
                              running ? " so far" : "");
                        continue;
                }
                if (json_object_object_get_ex(e, "energy_j", &v))
                        snprintf(energy, sizeof energy, "; %.0f J", json_object_get_double(v));
                else
                        energy[0] = '\0';
                double mean = json_object_object_get_ex(e, "util_mean", &v) ? json_object_get_double(v) : 0;
                int64_t max = json_object_object_get_ex(e, "util_max", &v) ? json_object_get_int64(v) : 0;
                uint64_t mem = json_object_object_get_ex(e, "memory_max", &v) ? (uint64_t) json_object_get_int64(v) : 0;
                char own[64] = "", c[32];
                /* The GPU's memory is everyone's on it; its own processes' is the job's. */
                if (json_object_object_get_ex(e, "own_memory_max", &v))
                        snprintf(own, sizeof own, " (its own processes: %s)",
                                 format_size(c, sizeof c, (uint64_t) json_object_get_int64(v)));
                field(f, key, "%.0f%% busy on average, %" PRIi64 "%% at most; %s memory at most%s%s; held %s%s", mean,
                      max, format_size(b, sizeof b, mem), own, energy, format_elapsed(a, sizeof a, held),
                      running ? " so far" : "");
        }
}

int verb_show(Cli *cli, int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, 'j' },
                {},
        };
        _cleanup_free_ uint64_t *ids = NULL;
        size_t n = 0;
        int c, r, status;

        cli_reset_getopt();
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("Usage: corral show [--json] JOBID...\n\n"
                               "Show everything about jobs. Command, paths, environment and usage are\n"
                               "shown to the job's owner and administrators only.\n");
                        return CLI_EXIT_SUCCESS;
                case 'j':
                        cli->json = true;
                        break;
                default:
                        log_error("show: see corral show --help");
                        return CLI_EXIT_USAGE;
                }
        r = cli_args_to_jobs(cli, argc, argv, "corral show JOBID...; corral queue lists them", &ids, &n, &status);
        if (r != 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                _cleanup_(reply_done) Reply reply = {};
                _cleanup_(job_entry_done) JobEntry e = { .info = JOB_INFO_INIT };
                json_object *job, *v;
                char subject[64];

                snprintf(subject, sizeof(subject), "job %" PRIu64, ids[i]);
                r = cli_call(cli, CORRAL_METHOD_SHOW, json_job_id(ids[i]), &reply);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                if (reply.error) {
                        r = cli_report_error(cli, subject, &reply); /* MAX() evaluates twice */
                        status = MAX(status, r);
                        continue;
                }
                if (cli->json) {
                        (void) cli_print_json(reply.parameters);
                        continue;
                }
                if (!json_object_object_get_ex(reply.parameters, "job", &job) || job_entry_from_json(job, &e) < 0) {
                        log_error("%s: corrald sent a reply this corral cannot read (are corral and corrald the "
                                  "same version? corral info)", subject);
                        status = MAX(status, CLI_EXIT_FAILURE);
                        continue;
                }
                if (i > 0)
                        putchar('\n');
                r = job_show_print(stdout, &e, time(NULL));
                if (r == -ENOMEM)
                        return cli_oom();
                job_gpu_usage_print(stdout, job);
                if (json_object_object_get_ex(job, "gpu_idle", &v) && json_object_is_type(v, json_type_string))
                        field(stdout, "GPUIdle", "%s", json_object_get_string(v));
                if (json_object_object_get_ex(job, "gpu_share_exceeded", &v) && json_object_is_type(v, json_type_string))
                        field(stdout, "GPUShare", "%s", json_object_get_string(v));
                job_history_print(stdout, job);
        }
        return status;
}
