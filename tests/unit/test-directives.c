/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/directives.h"
#include "cli/submit-check.h"
#include "cli/submit-options.h"
#include "strv.h"

#define NOW ((time_t) 1700000000)

static bool streq_ptr(const char *a, const char *b) {
        return a && b ? streq(a, b) : a == b;
}
#define G (UINT64_C(1) << 30)
#define M (UINT64_C(1) << 20)

static void dump_errors(const DirectiveErrors *e) {
        for (size_t i = 0; i < e->n; i++) {
                _cleanup_free_ char *s = directive_error_format(&e->items[i]);
                fprintf(stderr, "  %s\n", s);
        }
}

static void expect_error(const DirectiveErrors *e, size_t i, unsigned line, bool warning, const char *msg) {
        _cleanup_free_ char *s = NULL;

        if (i >= e->n || e->items[i].line != line || e->items[i].warning != warning ||
            !streq(e->items[i].message, msg)) {
                fprintf(stderr, "want error %zu: %u %s\n", i, line, msg);
                dump_errors(e);
                fail();
        }
        s = directive_error_format(&e->items[i]);
        assert_non_null(s);
}

/* Parses script with the options already given in argv (may be NULL), then finalizes. */
static int run(const char *script, char **argv, SubmitOptions *o, DirectiveErrors *e) {
        int r, first;
        char *err = NULL;

        submit_options_init(o, NOW);
        o->sendmail_path = "/nonexistent/sendmail"; /* the warning, on any machine */

        if (argv) {
                assert_int_equal(submit_options_parse_argv((int) strv_length(argv), argv, o, &first, &err), 0);
        }
        r = directives_parse(script, "job.sh", o, e);
        if (r < 0)
                return r;
        o->req.script = strdup(script);
        r = submit_options_finalize(o, "/home/ann", NULL, &err);
        if (r < 0) {
                fprintf(stderr, "finalize: %s\n", err);
                free(err);
        }
        return r;
}

static void test_slurm_basic(void **state) {
        static const char script[] =
                "#!/bin/bash\n"
                "#\n"
                "#SBATCH --job-name=md-sim\n"
                "#SBATCH -n 2\n"
                "#SBATCH --cpus-per-task=4\n"
                "#SBATCH --mem=8G\n"
                "#SBATCH -t 1-02:30:00\n"
                "#SBATCH -o out-%j.log\n"
                "#SBATCH --error=err-%j.log\n"
                "#SBATCH -p batch -A chem\n"
                "#SBATCH --array=1-20%4\n"
                "#SBATCH --dependency=afterok:10:11,afterany:12\n"
                "#SBATCH --nodes=1\n"
                "#SBATCH --requeue --nice=50\n"
                "\n"
                "module load gromacs\n"
                "srun gmx mdrun\n";
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_(directive_errors_done) DirectiveErrors e = {};

        assert_int_equal(run(script, NULL, &o, &e), 0);
        assert_int_equal(e.n, 0);
        assert_string_equal(o.req.name, "md-sim");
        assert_int_equal(o.req.cpus, 8);
        assert_true(o.req.memory == 8 * G);
        assert_int_equal(o.req.walltime_sec, 86400 + 2 * 3600 + 30 * 60);
        assert_string_equal(o.req.stdout_path, "out-%j.log"); /* %j stays for the daemon */
        assert_string_equal(o.req.stderr_path, "err-%j.log");
        assert_string_equal(o.req.queue, "batch");
        assert_string_equal(o.req.project, "chem");
        assert_int_equal(o.req.array.start, 1);
        assert_int_equal(o.req.array.end, 20);
        assert_int_equal(o.req.array.max_concurrent, 4);
        assert_int_equal(o.req.n_dependencies, 3);
        assert_int_equal(o.req.dependencies[1].type, DEPENDENCY_AFTEROK);
        assert_int_equal(o.req.dependencies[1].job_id, 11);
        assert_int_equal(o.req.dependencies[2].type, DEPENDENCY_AFTERANY);
        assert_int_equal(o.req.rerunnable, 1);
        assert_int_equal(o.req.nice, 50);
        assert_string_equal(o.req.workdir, "/home/ann");
}

/* Directives as sbatch and qsub read them, one case a row: the script, what
 * directives_parse() returns and reports (line, warning, message; in order), and for a
 * script that parses, what the finalized request holds (NULL: not checked, "" for a
 * path or queue: none). */
typedef struct Report {
        unsigned line;
        bool warning;
        const char *message;
} Report;

typedef struct Row {
        const char *what;
        const char *script;
        const char *shell_env;          /* SHELL= in the environment finalize gets */
        int ret;
        Report reports[6];
        const char *script_head;        /* the script the daemon gets starts so */
        const char *array;              /* array_spec_format() */
        const char *queue, *project, *stdout_path, *stderr_path;
        const char *env;                /* a NAME=VALUE the job gets */
        uint64_t memory;
        const char *warn;               /* --signal as "SIG@SEC" or "B:SIG@SEC" */
} Row;

#define MAIL_WARNING "accepted, but this machine has no /nonexistent/sendmail: no mail will be sent for this job"
#define QOS_WARNING "Corral has no QOS: not used for scheduling (choose a queue with --partition); " \
                    "the job sees it as SLURM_JOB_QOS"
#define NO_SHEBANG "not a batch script: the first line must start with #! and an interpreter, e.g. #!/bin/bash"

static const Row rows[] = {
        /* qsub needs no #!: -S names the interpreter, else the login shell runs it. */
        { .what = "PBS without #!, -S",
          .script = "#PBS -N x\n#PBS -S /bin/bash\necho $0\n",
          .script_head = "#!/bin/bash\n#PBS -N x\n" },
        { .what = "PBS without #!, the login shell",
          .script = "#PBS -l walltime=1:00:00\necho\n", .shell_env = "/bin/zsh",
          .script_head = "#!/bin/zsh\n#PBS -l" },
        { .what = "PBS without #! nor $SHELL: run by /bin/sh, as corrald runs any such script",
          .script = "#PBS -l walltime=1:00:00\necho\n",
          .script_head = "#PBS -l walltime" },
        { .what = "PBS -S over the #! line, a host list's first entry",
          .script = "#!/bin/sh\n#PBS -S /bin/bash@node1,/bin/sh@node2\nset -o pipefail\n",
          .script_head = "#!/bin/bash\n#PBS -S " },
        { .what = "PBS -S not a path",
          .script = "#PBS -S bash\ntrue\n", .ret = -EINVAL,
          .reports = { { 1, false, "#PBS -S bash: expected the absolute path of a shell, e.g. /bin/bash" } } },
        /* sbatch does need one, and a refusal lists the directives' errors too. */
        { .what = "#SBATCH without #!",
          .script = "#SBATCH -n 2\n#SBATCH --frobnicate\nhostname\n", .ret = -EINVAL,
          .reports = { { 1, false, NO_SHEBANG }, { 2, false, "#SBATCH --frobnicate: unknown option" } } },

        /* Arrays: Torque's -t, sbatch's lists (one range with one step when evenly spaced). */
        { .what = "Torque -t", .script = "#!/bin/sh\n#PBS -t 1-10%4\ntrue\n", .array = "1-10%4" },
        { .what = "Torque -t, a list", .script = "#!/bin/sh\n#PBS -t 0,2,4-8:2\ntrue\n", .array = "0-8:2" },
        { .what = "sbatch list evenly spaced", .script = "#!/bin/sh\n#SBATCH --array=1,3,5-9:2%2\ntrue\n",
          .array = "1-9:2%2" },
        { .what = "sbatch step and list", .script = "#!/bin/sh\n#SBATCH -a 1-20:2,21\ntrue\n", .array = "1-21:2" },
        { .what = "sbatch list", .script = "#!/bin/sh\n#SBATCH --array=1,6-7,12\ntrue\n", .array = "1,6-7,12" },
        { .what = "sbatch list with steps, out of order, and a limit",
          .script = "#!/bin/sh\n#SBATCH --array=40-42,1-20:2,30%3\ntrue\n", .array = "1-20:2,30,40-42%3" },
        { .what = "sbatch step", .script = "#!/bin/sh\n#SBATCH --array=1-20:2\ntrue\n", .array = "1-20:2" },
        { .what = "Torque -t list", .script = "#!/bin/sh\n#PBS -t 1,6-7,12%2\ntrue\n", .array = "1,6-7,12%2" },
        { .what = "sbatch list naming an index twice",
          .script = "#!/bin/sh\n#SBATCH --array=1-5,3\ntrue\n", .ret = -EINVAL,
          .reports = { { 2, false, "#SBATCH --array=1-5,3: expected START[-END[:STEP]][,...][%MAX], each index once" } } },

        /* -q in #SBATCH is the QOS: never the queue; it is carried to the job. */
        { .what = "#SBATCH -q",
          .script = "#!/bin/sh\n#SBATCH -q high\n#SBATCH -p batch\ntrue\n",
          .reports = { { 2, true, "#SBATCH -q high: " QOS_WARNING } },
          .queue = "batch", .env = "SLURM_JOB_QOS=high" },
        { .what = "#SBATCH --qos",
          .script = "#!/bin/sh\n#SBATCH --qos=normal\ntrue\n",
          .reports = { { 2, true, "#SBATCH --qos=normal: " QOS_WARNING } },
          .queue = "", .env = "SLURM_JOB_QOS=normal" },
        { .what = "#CORRAL -q is still the queue", .script = "#!/bin/sh\n#CORRAL -q fast\ntrue\n", .queue = "fast" },

        /* --signal: sent by the supervisor that long before the limit (60 s by default);
         * B: to the script's shell only; R: (reservations) means nothing here. */
        { .what = "--signal B:", .script = "#!/bin/sh\n#SBATCH --signal=B:USR1@300\ntrue\n", .warn = "B:10@300" },
        { .what = "--signal, default time, the later wins",
          .script = "#!/bin/sh\n#SBATCH --signal=B:USR1@300\n#SBATCH --signal=SIGTERM\ntrue\n", .warn = "15@60" },
        { .what = "--signal by number, R:", .script = "#!/bin/sh\n#SBATCH --signal=R:12@0\ntrue\n", .warn = "12@0" },
        { .what = "--signal RB:", .script = "#!/bin/sh\n#SBATCH --signal=RB:usr2@65535\ntrue\n", .warn = "B:12@65535" },
        { .what = "--signal bad",
          .script = "#!/bin/sh\n#SBATCH --signal=USR1@x\n#SBATCH --signal=FROB\n#SBATCH --signal=X:TERM\n"
                    "#SBATCH --signal=TERM@65536\n#SBATCH --signal=65\n",
          .ret = -EINVAL,
          .reports = { { 2, false, "#SBATCH --signal=USR1@x: expected [B:]SIGNAL[@SECONDS], e.g. B:USR1@300" },
                       { 3, false, "#SBATCH --signal=FROB: expected [B:]SIGNAL[@SECONDS], e.g. B:USR1@300" },
                       { 4, false, "#SBATCH --signal=X:TERM: expected [B:]SIGNAL[@SECONDS], e.g. B:USR1@300" },
                       { 5, false, "#SBATCH --signal=TERM@65536: expected [B:]SIGNAL[@SECONDS], e.g. B:USR1@300" },
                       { 6, false, "#SBATCH --signal=65: expected [B:]SIGNAL[@SECONDS], e.g. B:USR1@300" } } },

        /* -k: the output is on this machine anyway; group_list: the project. */
        { .what = "PBS -k and group_list",
          .script = "#!/bin/sh\n#PBS -k oe\n#PBS -W group_list=physics@server\ntrue\n", .project = "physics" },
        { .what = "PBS -k bad", .script = "#!/bin/sh\n#PBS -k x\n", .ret = -EINVAL,
          .reports = { { 2, false, "#PBS -k x: expected e, o, eo, oe, d or n" } } },

        /* --mem and --mem-per-cpu: sbatch refuses the pair, whichever comes first. */
        { .what = "--mem then --mem-per-cpu",
          .script = "#!/bin/sh\n#SBATCH --mem=8G\n#SBATCH --mem-per-cpu=2G\n", .ret = -EINVAL,
          .reports = { { 3, false, "#SBATCH --mem-per-cpu=2G: --mem and --mem-per-cpu are mutually exclusive" } } },
        { .what = "--mem-per-cpu then PBS mem",
          .script = "#!/bin/sh\n#SBATCH --mem-per-cpu=2G\n#PBS -l mem=4gb\n", .ret = -EINVAL,
          .reports = { { 3, false, "#PBS -l mem=4gb: --mem and --mem-per-cpu are mutually exclusive" } } },
        { .what = "--mem twice: the later", .script = "#!/bin/sh\n#SBATCH --mem=8G\n#SBATCH --mem=4G\n",
          .memory = 4 * G },

        /* PBS -o/-e DIR/: qsub's default file name there. */
        { .what = "PBS -o DIR/",
          .script = "#!/bin/sh\n#PBS -o logs/\n#PBS -e host-1.example:/scratch/err/\ntrue\n",
          .stdout_path = "logs/%x.o%j", .stderr_path = "/scratch/err/%x.e%j" },
        { .what = "PBS -o DIR/ -j oe",
          .script = "#!/bin/sh\n#PBS -o /scratch/out/\n#PBS -j oe\ntrue\n",
          .stdout_path = "/scratch/out/%x.o%j", .stderr_path = "/scratch/out/%x.o%j" },

        /* Mail: accepted, one warning for the whole script; NONE wants none. */
        { .what = "mail options",
          .script = "#!/bin/sh\n#SBATCH --mail-type=END,FAIL\n#SBATCH --mail-user=ann@example.org\n"
                    "#PBS -m abe\n#PBS -M ann@example.org\ntrue\n",
          .reports = { { 2, true, "#SBATCH --mail-type=END,FAIL: " MAIL_WARNING } } },
        { .what = "mail type NONE", .script = "#!/bin/sh\n#SBATCH --mail-type=NONE\n#PBS -m n\ntrue\n" },
        { .what = "mail bad", .script = "#!/bin/sh\n#SBATCH --mail-type=SOMETIMES\n#PBS -m xyz\n", .ret = -EINVAL,
          .reports = { { 2, false, "#SBATCH --mail-type=SOMETIMES: unknown mail type 'SOMETIMES' (BEGIN, END, FAIL, ALL, NONE, ...)" },
                       { 3, false, "#PBS -m xyz: expected a combination of a, b, e, or n" } } },

        /* Known, but not on one machine. */
        { .what = "single machine",
          .script = "#!/bin/sh\n#SBATCH --gres=mps:1\n#SBATCH --cluster=c2\n#SBATCH -M c2 -w n[1-4]\n"
                    "#SBATCH --nodes=2\n#PBS -l nodes=2:ppn=4\n",
          .ret = -EINVAL,
          .reports = { { 2, false, "#SBATCH --gres=mps:1: generic resource 'mps' is not available here: GPUs and their shards are the only ones (gpu[:TYPE][:COUNT], shard[:COUNT])" },
                       { 3, false, "#SBATCH --cluster=c2: not supported on a single machine (its cluster is its host name, or all)" },
                       { 4, false, "#SBATCH -M c2: not supported on a single machine (its cluster is its host name, or all)" },
                       { 4, false, "#SBATCH -w n[1-4]: not supported on a single machine (its one node is its host name)" },
                       { 5, false, "#SBATCH --nodes=2: not supported on a single machine (only 1 node can be requested)" },
                       { 6, false, "#PBS -l nodes=2:ppn=4: not supported on a single machine (only nodes=1 can be requested)" } } },

        /* Every bad option of a line, not only the first. */
        { .what = "every error of a line",
          .script = "#!/bin/sh\n#SBATCH --gres=gpu:x:y:z --frobnicate x --cpus-per-task=0 -J ok\n"
                    "#PBS -l vmem=8gb,walltime=1:00:00,foo=1 -Z\n",
          .ret = -EINVAL,
          .reports = { { 2, false, "#SBATCH --gres=gpu:x:y:z: expected gpu[:TYPE][:COUNT], got 'gpu:x:y:z'" },
                       { 2, false, "#SBATCH --frobnicate: unknown option" },
                       { 2, false, "#SBATCH --cpus-per-task=0: must be a number between 1 and 8192" },
                       { 3, false, "#PBS -l vmem=8gb,walltime=1:00:00,foo=1: resource 'vmem' not supported; "
                                   "resource 'foo' not supported" },
                       { 3, false, "#PBS -Z: unknown option" } } },
};

static void test_directive_table(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const Row *w = &rows[i];
                _cleanup_(submit_options_done) SubmitOptions o;
                _cleanup_(directive_errors_done) DirectiveErrors e = {};
                _cleanup_free_ char *shell = NULL;
                char *env[2] = {}, *err = NULL, buf[64];
                size_t n = 0;
                int r;

                submit_options_init(&o, NOW);
                o.sendmail_path = "/nonexistent/sendmail";

                r = directives_parse(w->script, "job.sh", &o, &e);
                while (n < ELEMENTSOF(w->reports) && w->reports[n].message)
                        n++;
                if (r != w->ret || e.n != n) {
                        fprintf(stderr, "row \"%s\": returned %d, want %d; %zu reports, want %zu\n", w->what, r,
                                w->ret, e.n, n);
                        dump_errors(&e);
                        fail();
                }
                for (size_t k = 0; k < n; k++)
                        expect_error(&e, k, w->reports[k].line, w->reports[k].warning, w->reports[k].message);
                if (r < 0)
                        continue;

                if (w->shell_env) {
                        assert_true(asprintf(&shell, "SHELL=%s", w->shell_env) > 0);
                        env[0] = shell;
                }
                o.req.script = strdup(w->script);
                assert_non_null(o.req.script);
                if (submit_options_finalize(&o, "/home/ann", env, &err) < 0) {
                        fprintf(stderr, "row \"%s\": finalize: %s\n", w->what, err);
                        fail();
                }
#define CHECK_STR(name, want, got)                                                                         \
        if ((want) && !streq((want), strempty(got))) {                                                      \
                fprintf(stderr, "row \"%s\": %s is \"%s\", want \"%s\"\n", w->what, name, strna(got), want); \
                fail();                                                                                     \
        }
                if (w->script_head && !strneq(o.req.script, w->script_head, strlen(w->script_head))) {
                        fprintf(stderr, "row \"%s\": the script starts \"%.40s\"\n", w->what, o.req.script);
                        fail();
                }
                CHECK_STR("the array", w->array,
                          o.req.array.set ? array_spec_format(&o.req.array, buf, sizeof(buf)) : NULL);
                CHECK_STR("the queue", w->queue, o.req.queue);
                CHECK_STR("the project", w->project, o.req.project);
                CHECK_STR("stdout", w->stdout_path, o.req.stdout_path);
                CHECK_STR("stderr", w->stderr_path, o.req.stderr_path);
#undef CHECK_STR
                if (w->env && !strv_contains(o.req.env, w->env)) {
                        fprintf(stderr, "row \"%s\": the job does not get %s\n", w->what, w->env);
                        fail();
                }
                if (w->memory)
                        assert_true(o.req.memory == w->memory);
                if (w->warn) {
                        snprintf(buf, sizeof buf, "%s%u@%u", o.req.warn_batch_only ? "B:" : "", o.req.warn_signal,
                                 o.req.warn_sec);
                        if (!streq(buf, w->warn)) {
                                fprintf(stderr, "row \"%s\": --signal gives %s, want %s\n", w->what, buf, w->warn);
                                fail();
                        }
                } else
                        assert_int_equal(o.req.warn_signal, 0);
        }
}

/* PBS -o DIR without the '/': a directory there (relative paths from the working
 * directory) gets qsub's default name; a file, a pattern or nothing there stays. */
static void test_pbs_output_dir(void **state) {
        char root[] = "/tmp/test-directives-XXXXXX", path[256];
        static const char script[] =
                "#!/bin/sh\n"
                "#PBS -o out\n"
                "#PBS -e /abs/err\n"
                "true\n";
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_(directive_errors_done) DirectiveErrors e = {};
        int fd;

        assert_non_null(mkdtemp(root));
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(mkdirat(fd, "home", 0755), 0);
        assert_int_equal(mkdirat(fd, "home/ann", 0755), 0);
        assert_int_equal(mkdirat(fd, "home/ann/out", 0755), 0);
        assert_int_equal(mkdirat(fd, "abs", 0755), 0);

        /* /abs/err does not exist (yet): a file of that name. */
        assert_int_equal(run(script, NULL, &o, &e), 0);
        assert_int_equal(submit_options_resolve_output_dirs(&o, fd), 0);
        assert_string_equal(o.req.stdout_path, "out/%x.o%j");
        assert_string_equal(o.req.stderr_path, "/abs/err");
        submit_options_done(&o);

        assert_int_equal(mkdirat(fd, "abs/err", 0755), 0);
        assert_int_equal(run(script, NULL, &o, &e), 0);
        assert_int_equal(submit_options_resolve_output_dirs(&o, fd), 0);
        assert_string_equal(o.req.stderr_path, "/abs/err/%x.e%j");
        submit_options_done(&o);

        /* Joined: the one file, in the directory of -o. */
        {
                static const char joined[] = "#!/bin/sh\n#PBS -o out\n#PBS -j oe\ntrue\n";
                assert_int_equal(run(joined, NULL, &o, &e), 0);
                assert_int_equal(submit_options_resolve_output_dirs(&o, fd), 0);
                assert_string_equal(o.req.stdout_path, "out/%x.o%j");
                assert_string_equal(o.req.stderr_path, "out/%x.o%j");
                submit_options_done(&o);
        }
        /* #SBATCH -o is a file name, directory or not (as sbatch). */
        {
                static const char slurm[] = "#!/bin/sh\n#SBATCH -o out\ntrue\n";
                assert_int_equal(run(slurm, NULL, &o, &e), 0);
                assert_int_equal(submit_options_resolve_output_dirs(&o, fd), 0);
                assert_string_equal(o.req.stdout_path, "out");
                submit_options_done(&o);
        }
        /* The command line's -o wins, and is not looked at. */
        {
                char *argv[] = { (char *) "submit", (char *) "-o", (char *) "out", (char *) "job.sh", NULL };
                assert_int_equal(run(script, argv, &o, &e), 0);
                assert_int_equal(submit_options_resolve_output_dirs(&o, fd), 0);
                assert_string_equal(o.req.stdout_path, "out");
        }

        snprintf(path, sizeof(path), "rm -rf '%s'", root);
        assert_int_equal(system(path), 0);
        close(fd);
}

static void test_slurm_mem_per_cpu(void **state) {
        static const char script[] =
                "#!/bin/sh\n"
                "#SBATCH --cpus-per-task=4\n"
                "#SBATCH --mem-per-cpu=2G\n"
                "#SBATCH --time=90\n"
                "echo hi\n";
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_(directive_errors_done) DirectiveErrors e = {};

        assert_int_equal(run(script, NULL, &o, &e), 0);
        assert_int_equal(o.req.cpus, 4);
        assert_true(o.req.memory == 8 * G);
        assert_int_equal(o.req.walltime_sec, 90 * 60); /* Slurm: bare number = minutes */
}

/* Mail: the events and the address in the request, the last mail type winning, NONE
 * clearing; no warning where sendmail is there. */
static void test_mail(void **state) {
        static const struct {
                const char *script;
                unsigned events;
                const char *user;
        } t[] = {
                { "#!/bin/sh\n#SBATCH --mail-type=END,FAIL\n#SBATCH --mail-user=ann@example.org\ntrue\n",
                  MAIL_END | MAIL_FAIL, "ann@example.org" },
                { "#!/bin/sh\n#SBATCH --mail-type=ALL,ARRAY_TASKS\ntrue\n", MAIL_ALL | MAIL_ARRAY_TASKS, NULL },
                { "#!/bin/sh\n#SBATCH --mail-type=BEGIN,TIME_LIMIT_90\ntrue\n", MAIL_BEGIN | MAIL_TIME_LIMIT_90, NULL },
                { "#!/bin/sh\n#SBATCH --mail-type=END\n#SBATCH --mail-type=NONE\ntrue\n", 0, NULL },
                { "#!/bin/sh\n#PBS -m abe\n#PBS -M bob\ntrue\n", MAIL_FAIL | MAIL_BEGIN | MAIL_END, "bob" },
                { "#!/bin/sh\n#PBS -m n\ntrue\n", 0, NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_(submit_options_done) SubmitOptions o;
                _cleanup_(directive_errors_done) DirectiveErrors e = {};

                submit_options_init(&o, NOW);
                o.sendmail_path = "/bin/sh"; /* executable: mail can be sent */
                assert_int_equal(directives_parse(t[i].script, "job.sh", &o, &e), 0);
                assert_int_equal(e.n, 0);
                assert_int_equal(o.req.mail_events, t[i].events);
                assert_string_equal(strempty(o.req.mail_user), strempty(t[i].user));
        }
        {
                _cleanup_(submit_options_done) SubmitOptions o;
                _cleanup_(directive_errors_done) DirectiveErrors e = {};

                submit_options_init(&o, NOW);
                assert_int_equal(directives_parse("#!/bin/sh\n#SBATCH --mail-user=-oQ/tmp\ntrue\n", "job.sh", &o, &e),
                                 -EINVAL);
                expect_error(&e, 0, 2, false,
                             "#SBATCH --mail-user=-oQ/tmp: invalid address '-oQ/tmp' (a user name or user@host)");
        }
}

static void test_slurm_unsupported(void **state) {
        static const char script[] =
                "#!/bin/bash\n"                         /* 1 */
                "#SBATCH -J ok\n"                       /* 2 */
                "#SBATCH --mail-type=END\n"             /* 3 */
                "#SBATCH --mail-user=a@b.c\n"           /* 4 */
                "## SBATCH --gres=gpu:2 (commented out)\n" /* 5 */
                "#SBATCH --time=10\n"                   /* 6 */
                "#SBATCH --licenses=matlab\n"           /* 7 */
                "#SBATCH --frobnicate\n"                /* 8 */
                "#SBATCH --nodes=2\n"                   /* 9 */
                "#SBATCH --cpus-per-task 0\n"           /* 10 */
                "#SBATCH stray\n"                       /* 11 */
                "#SBATCH --name \"unterminated\n"       /* 12 */
                "hostname\n"                            /* 13 */
                "#SBATCH --mem=1G\n";                   /* 14 */
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_(directive_errors_done) DirectiveErrors e = {};

        submit_options_init(&o, NOW);
        o.sendmail_path = "/nonexistent/sendmail";

        assert_int_equal(directives_parse(script, "job.sh", &o, &e), -EINVAL);
        assert_int_equal(e.n, 8);
        /* Mail is accepted, with one warning for the script. */
        expect_error(&e, 0, 3, true,
                     "#SBATCH --mail-type=END: " MAIL_WARNING);
        expect_error(&e, 1, 7, false, "#SBATCH --licenses=matlab: option not supported");
        expect_error(&e, 2, 8, false, "#SBATCH --frobnicate: unknown option");
        expect_error(&e, 3, 9, false,
                     "#SBATCH --nodes=2: not supported on a single machine (only 1 node can be requested)");
        expect_error(&e, 4, 10, false, "#SBATCH --cpus-per-task 0: must be a number between 1 and 8192");
        expect_error(&e, 5, 11, false, "#SBATCH stray: unexpected argument");
        expect_error(&e, 6, 12, false, "#SBATCH --name \"unterminated: unterminated quote");
        expect_error(&e, 7, 14, true, "#SBATCH --mem=1G: ignored, directives after the first command are not read");
        {
                _cleanup_free_ char *s = directive_error_format(&e.items[1]);
                assert_string_equal(s, "job.sh:7: #SBATCH --licenses=matlab: option not supported");
        }
        /* The good lines still applied; the late one did not. */
        assert_string_equal(o.req.name, "ok");
        assert_int_equal(o.req.walltime_sec, 600);
        assert_int_equal(o.req.memory, 0);
}

static void test_pbs_torque(void **state) {
        static const char script[] =
                "#!/bin/bash\r\n"
                "#PBS -N blast_run\r\n"
                "#PBS -l nodes=1:ppn=4\r\n"
                "#PBS -l walltime=01:00:00,mem=4gb\r\n"
                "#PBS -q long\r\n"
                "#PBS -j oe\r\n"
                "#PBS -o /scratch/ann/blast.out\r\n"
                "#PBS -A bio\r\n"
                "#PBS -r n\r\n"
                "cd $PBS_O_WORKDIR\r\n";
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_(directive_errors_done) DirectiveErrors e = {};

        assert_int_equal(run(script, NULL, &o, &e), 0);
        assert_int_equal(e.n, 0);
        assert_string_equal(o.req.name, "blast_run");
        assert_int_equal(o.req.cpus, 4);
        assert_int_equal(o.req.walltime_sec, 3600); /* PBS duration: H:M:S */
        assert_true(o.req.memory == 4 * G);
        assert_string_equal(o.req.queue, "long");
        assert_string_equal(o.req.stdout_path, "/scratch/ann/blast.out");
        assert_string_equal(o.req.stderr_path, "/scratch/ann/blast.out");
        assert_string_equal(o.req.project, "bio");
        assert_int_equal(o.req.rerunnable, 0);
}

static void test_pbs_pro_select(void **state) {
        static const char script[] =
                "#!/bin/bash\n"
                "#PBS -l select=2:ncpus=4:mem=4gb\n"
                "#PBS -l place=scatter:excl\n"
                "#PBS -l walltime=45:00\n"
                "#PBS -W depend=afterok:123.pbs01:124.pbs01\n"
                "#PBS -J 1-10:2\n"
                "#PBS -h\n"
                "#PBS -V\n"
                "#PBS -v INPUT=/data/x,EXTRA\n"
                "#PBS -d /scratch/run\n"
                "#PBS -P proj-7\n"
                "./run\n";
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_(directive_errors_done) DirectiveErrors e = {};

        assert_int_equal(run(script, NULL, &o, &e), 0);
        assert_int_equal(o.req.cpus, 8);
        assert_true(o.req.memory == 8 * G);
        assert_true(o.req.exclusive);
        assert_int_equal(o.req.walltime_sec, 45 * 60);
        assert_int_equal(o.req.n_dependencies, 2);
        assert_int_equal(o.req.dependencies[0].job_id, 123);
        assert_int_equal(o.req.dependencies[1].job_id, 124);
        assert_int_equal(o.req.array.step, 2);
        assert_true(o.req.hold);
        assert_int_equal(o.export_all, 1);
        assert_string_equal(o.req.env[0], "INPUT=/data/x"); /* EXTRA is not in the (empty) environ */
        assert_int_equal(strv_length(o.req.env), 1);
        assert_string_equal(o.req.workdir, "/scratch/run");
        assert_string_equal(o.req.project, "proj-7");
}

static void test_pbs_unsupported(void **state) {
        static const char script[] =
                "#!/bin/sh\n"                           /* 1 */
                "#PBS -m abe\n"                         /* 2 */
                "#PBS -M ann@example.org\n"             /* 3 */
                "#PBS -l vmem=8gb\n"                    /* 4 */
                "#PBS -l nodes=2:ppn=8\n"               /* 5 */
                "#PBS -l select=1:ncpus=2:ngpus=x\n"    /* 6 */
                "#PBS -W group_list=staff\n"            /* 7 */
                "#PBS -Z\n"                             /* 8 */
                "#PBS -r maybe\n"                       /* 9 */
                "#PBS -l walltime=1:00:00\n"            /* 10 */
                "true\n";
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_(directive_errors_done) DirectiveErrors e = {};

        submit_options_init(&o, NOW);
        o.sendmail_path = "/nonexistent/sendmail";

        assert_int_equal(directives_parse(script, "pbs.sh", &o, &e), -EINVAL);
        assert_int_equal(e.n, 6);
        expect_error(&e, 0, 2, true,
                     "#PBS -m abe: " MAIL_WARNING);
        expect_error(&e, 1, 4, false, "#PBS -l vmem=8gb: resource 'vmem' not supported");
        expect_error(&e, 2, 5, false,
                     "#PBS -l nodes=2:ppn=8: not supported on a single machine (only nodes=1 can be requested)");
        expect_error(&e, 3, 6, false, "#PBS -l select=1:ncpus=2:ngpus=x: select: invalid ngpus=x (0 to 64 GPUs)");
        expect_error(&e, 4, 8, false, "#PBS -Z: unknown option");
        expect_error(&e, 5, 9, false, "#PBS -r maybe: expected y or n");
        assert_int_equal(o.req.walltime_sec, 3600);
        assert_string_equal(o.req.project, "staff");     /* -W group_list */
}

/* GPU requests in every dialect: what the finalized request holds. */
static void test_gpu_requests(void **state) {
        static const struct {
                const char *what;
                const char *script;
                const char *args[4];            /* command line options, before the script */
                unsigned gpus;
                const char *type, *constraint;
                bool binding;
                unsigned cpus;
        } cases[] = {
                { "sbatch --gres=gpu:1", "#!/bin/bash\n#SBATCH --gres=gpu:1\npython train.py\n", {}, 1, NULL, NULL, false, 1 },
                { "sbatch --gres=gpu:a100:2", "#!/bin/bash\n#SBATCH --gres=gpu:a100:2\n", {}, 2, "a100", NULL, false, 1 },
                { "sbatch --gres=gpu:a100 (one)", "#!/bin/bash\n#SBATCH --gres=gpu:a100\n", {}, 1, "a100", NULL, false, 1 },
                { "sbatch --gres=gpu (one)", "#!/bin/bash\n#SBATCH --gres=gpu\n", {}, 1, NULL, NULL, false, 1 },
                { "sbatch --gres=gres/gpu:3", "#!/bin/bash\n#SBATCH --gres=gres/gpu:3\n", {}, 3, NULL, NULL, false, 1 },
                { "sbatch --gres=none", "#!/bin/bash\n#SBATCH --gres=gpu:2\n#SBATCH --gres=none\n", {}, 0, NULL, NULL, false, 1 },
                { "sbatch --gres=gpu:a100:0", "#!/bin/bash\n#SBATCH --gres=gpu:a100:0\n", {}, 0, NULL, NULL, false, 1 },
                { "sbatch --gpus=1", "#!/bin/bash\n#SBATCH --gpus=1\n", {}, 1, NULL, NULL, false, 1 },
                { "sbatch -G h100:4", "#!/bin/bash\n#SBATCH -G h100:4\n", {}, 4, "h100", NULL, false, 1 },
                { "sbatch --gpus-per-node=2", "#!/bin/bash\n#SBATCH --gpus-per-node=2\n", {}, 2, NULL, NULL, false, 1 },
                { "sbatch --gpus-per-task=1 alone", "#!/bin/bash\n#SBATCH --gpus-per-task=1\n", {}, 1, NULL, NULL, false, 1 },
                /* Slurm counts --gpus-per-task by the tasks, whichever line comes first. */
                { "sbatch --gpus-per-task x --ntasks", "#!/bin/bash\n#SBATCH --gpus-per-task=2\n#SBATCH --ntasks=3\n#SBATCH -c 2\n",
                  {}, 6, NULL, NULL, false, 6 },
                { "sbatch -C gpu", "#!/bin/bash\n#SBATCH -C gpu\n#SBATCH --gres=gpu:1\n", {}, 1, NULL, "gpu", false, 1 },
                { "sbatch --constraint=a100|h100", "#!/bin/bash\n#SBATCH --constraint=\"(a100|h100)&nvlink\"\n", {}, 0,
                  NULL, "(a100|h100)&nvlink", false, 1 },
                { "sbatch --gres-flags=enforce-binding", "#!/bin/bash\n#SBATCH --gpus=2 --gres-flags=enforce-binding\n",
                  {}, 2, NULL, NULL, true, 1 },
                /* The later of the GPU options wins, as for any single value. */
                { "--gpus then --gres", "#!/bin/bash\n#SBATCH --gpus=a100:4\n#SBATCH --gres=gpu:2\n", {}, 2, NULL, NULL, false, 1 },
                { "--gpus-per-task then --gpus", "#!/bin/bash\n#SBATCH -n 4 --gpus-per-task=1\n#SBATCH --gpus=1\n", {}, 1,
                  NULL, NULL, false, 4 },
                /* The command line wins over directives, for all the GPU options at once. */
                { "command line --gpus over #SBATCH --gres", "#!/bin/bash\n#SBATCH --gres=gpu:v100:4\n",
                  { "--gpus=1" }, 1, NULL, NULL, false, 1 },
                { "command line -C over #SBATCH -C", "#!/bin/bash\n#SBATCH -C v100\n", { "-C", "a100" }, 0, NULL, "a100",
                  false, 1 },
                { "#CORRAL --gpus", "#!/bin/sh\n#CORRAL --gpus=2 --constraint=a100\n", {}, 2, NULL, "a100", false, 1 },
                /* PBS Pro: ngpus per chunk; Torque: gpus= and node properties. */
                { "PBS select ngpus", "#!/bin/sh\n#PBS -l select=1:ncpus=4:ngpus=2\n", {}, 2, NULL, NULL, false, 4 },
                { "PBS select 2 chunks ngpus", "#!/bin/sh\n#PBS -l select=2:ncpus=2:ngpus=1:mem=1gb\n", {}, 2, NULL, NULL,
                  false, 4 },
                { "PBS ngpus", "#!/bin/sh\n#PBS -l ngpus=3\n", {}, 3, NULL, NULL, false, 1 },
                { "Torque gpus", "#!/bin/sh\n#PBS -l nodes=1:ppn=8:gpus=2\n", {}, 2, NULL, NULL, false, 8 },
                { "Torque property", "#!/bin/sh\n#PBS -l nodes=1:ppn=2:gpus=1:a100:nvlink\n", {}, 1, NULL,
                  "a100&nvlink", false, 2 },
                /* MIG devices by profile, as Slurm's NVML autodetection types them. */
                { "sbatch --gres=gpu:1g.10gb (one)", "#!/bin/bash\n#SBATCH --gres=gpu:1g.10gb\n", {}, 1, "1g.10gb", NULL,
                  false, 1 },
                { "sbatch --gres=gpu:3g.40gb:2", "#!/bin/bash\n#SBATCH --gres=gpu:3g.40gb:2\n", {}, 2, "3g.40gb", NULL,
                  false, 1 },
                { "sbatch --gpus=1g.10gb:3", "#!/bin/bash\n#SBATCH --gpus=1g.10gb:3\n", {}, 3, "1g.10gb", NULL, false, 1 },
                { "sbatch --gres=gpu:nvidia_a100_1g.10gb:1", "#!/bin/bash\n#SBATCH --gres=gpu:nvidia_a100_1g.10gb:1\n", {}, 1,
                  "nvidia_a100_1g.10gb", NULL, false, 1 },
                { "command line --gres=gpu:2g.20gb over #SBATCH", "#!/bin/bash\n#SBATCH --gres=gpu:1\n",
                  { "--gres=gpu:2g.20gb" }, 1, "2g.20gb", NULL, false, 1 },
                { "PBS select ngpus with gpu_model", "#!/bin/sh\n#PBS -l select=1:ncpus=2:ngpus=1:gpu_model=1g.10gb\n", {}, 1,
                  "1g.10gb", NULL, false, 2 },
                { "PBS select 2 chunks with gpu_type", "#!/bin/sh\n#PBS -l select=2:ngpus=1:gpu_type=a100\n", {}, 2, "a100",
                  NULL, false, 2 },
                { "Torque MIG property", "#!/bin/sh\n#PBS -l nodes=1:ppn=1:gpus=1:mig\n", {}, 1, NULL, "mig", false, 1 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(submit_options_done) SubmitOptions o;
                _cleanup_(directive_errors_done) DirectiveErrors e = {};
                char *argv[6] = { (char *) "submit" };
                size_t argc = 1;

                for (size_t k = 0; cases[i].args[k]; k++)
                        argv[argc++] = (char *) cases[i].args[k];
                if (run(cases[i].script, argc > 1 ? argv : NULL, &o, &e) < 0 || e.n > 0) {
                        fprintf(stderr, "row \"%s\" failed\n", cases[i].what);
                        dump_errors(&e);
                        fail();
                }
                if (o.req.gpus != cases[i].gpus || !streq_ptr(o.req.gpu_type, cases[i].type) ||
                    !streq_ptr(o.req.constraint, cases[i].constraint) || o.req.gpu_binding != cases[i].binding ||
                    (o.req.cpus ?: 1) != cases[i].cpus) {
                        fprintf(stderr, "row \"%s\": gpus=%u type=%s constraint=%s binding=%d cpus=%u\n", cases[i].what,
                                o.req.gpus, strna(o.req.gpu_type), strna(o.req.constraint), o.req.gpu_binding,
                                o.req.cpus);
                        fail();
                }
        }
}

/* Slurm's shards: --gres=shard:K in each place it may be written, and what is refused. */
static void test_shard_requests(void **state) {
        static const struct {
                const char *script;
                const char *args[4];
                unsigned shards, gpus;
                const char *type;
        } cases[] = {
                { "#!/bin/bash\n#SBATCH --gres=shard:2\n", {}, 2, 0, NULL },
                { "#!/bin/bash\n#SBATCH --gres=shard\n", {}, 1, 0, NULL },
                { "#!/bin/bash\n#SBATCH --gres=gres/shard:3\n", {}, 3, 0, NULL },
                { "#!/bin/bash\n#SBATCH --gres=shard:a100:4\n", {}, 4, 0, "a100" },
                { "#!/bin/sh\n#CORRAL --gres=shard:1\n", {}, 1, 0, NULL },
                /* The later GPU option wins, whole GPUs or shards. */
                { "#!/bin/bash\n#SBATCH --gres=shard:2\n#SBATCH --gpus=1\n", {}, 0, 1, NULL },
                { "#!/bin/bash\n#SBATCH --gpus=2\n#SBATCH --gres=shard:1\n", {}, 1, 0, NULL },
                { "#!/bin/bash\n#SBATCH --gres=gpu:2\n", { "--gres=shard:3" }, 3, 0, NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(submit_options_done) SubmitOptions o;
                _cleanup_(directive_errors_done) DirectiveErrors e = {};
                char *argv[6] = { (char *) "submit" };
                size_t argc = 1;

                for (size_t k = 0; cases[i].args[k]; k++)
                        argv[argc++] = (char *) cases[i].args[k];
                if (run(cases[i].script, argc > 1 ? argv : NULL, &o, &e) < 0 || e.n > 0) {
                        fprintf(stderr, "row %zu failed\n", i);
                        dump_errors(&e);
                        fail();
                }
                if (o.req.shards != cases[i].shards || o.req.gpus != cases[i].gpus ||
                    !streq_ptr(o.req.gpu_type, cases[i].type)) {
                        fprintf(stderr, "row %zu: shards=%u gpus=%u type=%s\n", i, o.req.shards, o.req.gpus,
                                strna(o.req.gpu_type));
                        fail();
                }
        }

        {
                _cleanup_(submit_options_done) SubmitOptions o;
                _cleanup_(directive_errors_done) DirectiveErrors e = {};

                assert_int_equal(run("#!/bin/bash\n#SBATCH --gres=gpu:1,shard:1\n#SBATCH --gres=shard:2000\n"
                                     "#SBATCH --gres=shard:x:y:z\n", NULL, &o, &e), -EINVAL);
                assert_int_equal(e.n, 3);
                expect_error(&e, 0, 2, false, "#SBATCH --gres=gpu:1,shard:1: gpu and shard given together, or twice: "
                                              "a job takes whole GPUs or shards of one GPU");
                expect_error(&e, 1, 3, false, "#SBATCH --gres=shard:2000: invalid shard count '2000' (0 to 1024)");
                expect_error(&e, 2, 4, false, "#SBATCH --gres=shard:x:y:z: expected shard[:TYPE][:COUNT], got "
                                              "'shard:x:y:z'");
        }
}

/* Scripts as found in public repositories, each asking for GPUs one of Slurm's ways:
 * every one is accepted (the corpus of the directives fuzz target holds them too). */
static void test_real_gpu_scripts(void **state) {
        static const char *const scripts[] = {
                "#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --partition=gpu\n#SBATCH --gres=gpu:1\n"
                "#SBATCH --cpus-per-task=8\n#SBATCH --mem=32G\n#SBATCH --time=24:00:00\n"
                "#SBATCH --output=logs/%x-%j.out\n\nmodule load cuda\nsrun python train.py\n",
                "#!/bin/bash -l\n#SBATCH -N 1\n#SBATCH --ntasks=1\n#SBATCH --gpus=1\n#SBATCH -t 0-04:00\n"
                "nvidia-smi\n",
                "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-task=1\n"
                "#SBATCH --cpus-per-task=4\nsrun python -m torch.distributed.run main.py\n",
                "#!/bin/sh\n#SBATCH -C gpu\n#SBATCH -G 1\n#SBATCH -q regular\n#SBATCH -t 30\n#SBATCH -A m1234\n"
                "srun ./a.out\n",
        };
        static const unsigned gpus[] = { 1, 1, 4, 1 };

        for (size_t i = 0; i < ELEMENTSOF(scripts); i++) {
                _cleanup_(submit_options_done) SubmitOptions o;
                _cleanup_(directive_errors_done) DirectiveErrors e = {};

                assert_int_equal(run(scripts[i], NULL, &o, &e), 0);
                for (size_t k = 0; k < e.n; k++)
                        assert_true(e.items[k].warning); /* -q regular: the QOS warning only */
                assert_int_equal(o.req.gpus, gpus[i]);
        }
}

static void test_native_directives(void **state) {
        static const char script[] =
                "#!/usr/bin/env python3\n"
                "# A comment before the directives is fine.\n"
                "#CORRAL --cpus=2 --mem=512  # megabytes, as sbatch\n"
                "#CORRAL --io-read-bw=/dev/vdb:10M --io-write-bw /dev/vdb:5M\n"
                "#CORRAL --io-write-iops=/dev/vdb:300 --io-weight=50 --tasks-max=64\n"
                "#CORRAL --env 'GREETING=hello world' --env=\"N=1\"\n"
                "#CORRAL --export=NONE --exclusive --no-rerunnable\n"
                "#CORRAL -D sub/dir -i in.txt\n"
                "#CORRAL --begin=now+3600 -W\n"
                "import sys\n";
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_(directive_errors_done) DirectiveErrors e = {};
        char *env[] = { (char *) "HOME=/home/ann", (char *) "PATH=/bin", NULL };
        char *err = NULL;

        submit_options_init(&o, NOW);
        o.sendmail_path = "/nonexistent/sendmail";

        assert_int_equal(directives_parse(script, "x.py", &o, &e), 0);
        o.req.script = strdup(script);
        assert_int_equal(submit_options_finalize(&o, "/home/ann", env, &err), 0);
        assert_int_equal(o.req.cpus, 2);
        assert_true(o.req.memory == 512 * M);
        assert_int_equal(o.req.io_read_bw.items[0].limit, 10 * M);
        assert_string_equal(o.req.io_write_bw.items[0].device, "/dev/vdb");
        assert_int_equal(o.req.io_write_bw.items[0].limit, 5 * M);
        assert_int_equal(o.req.io_write_iops.items[0].limit, 300);
        assert_int_equal(o.req.io_weight, 50);
        assert_int_equal(o.req.tasks_max, 64);
        /* --export=NONE: only the explicit --env. */
        assert_int_equal(strv_length(o.req.env), 2);
        assert_string_equal(o.req.env[0], "GREETING=hello world");
        assert_string_equal(o.req.env[1], "N=1");
        assert_true(o.req.exclusive);
        assert_int_equal(o.req.rerunnable, 0);
        assert_string_equal(o.req.workdir, "/home/ann/sub/dir");
        assert_string_equal(o.req.stdin_path, "in.txt");
        assert_int_equal(o.req.begin_time, NOW + 3600);
        assert_true(o.wait);
}

static void test_command_line_wins(void **state) {
        static const char script[] =
                "#!/bin/bash\n"
                "#SBATCH --mem-per-cpu=4G\n"
                "#SBATCH --time=2:00:00\n"
                "#SBATCH -c 2\n"
                "#SBATCH -J from-script\n"
                "#SBATCH --env=A=script --env=B=script\n"
                "#PBS -q pbsq\n"
                "#PBS -j oe\n"
                "run\n";
        char *argv[] = { (char *) "submit", (char *) "--mem=1G", (char *) "-t", (char *) "10", (char *) "-n4",
                         (char *) "--env", (char *) "A=cli", (char *) "-q", (char *) "fast", (char *) "job.sh",
                         (char *) "arg1", NULL };
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_(directive_errors_done) DirectiveErrors e = {};

        assert_int_equal(run(script, argv, &o, &e), 0);
        assert_int_equal(o.req.cpus, 8);               /* -n 4 from the CLI x -c 2 from the script */
        assert_true(o.req.memory == 1 * G);            /* --mem wins over the script's --mem-per-cpu */
        assert_int_equal(o.req.walltime_sec, 600);
        assert_string_equal(o.req.name, "from-script");
        assert_int_equal(strv_length(o.req.env), 1);   /* the CLI's --env replaces the script's */
        assert_string_equal(o.req.env[0], "A=cli");
        assert_string_equal(o.req.queue, "fast");      /* also over PBS directives */
        assert_int_equal(o.join, SUBMIT_JOIN_OUTPUT);
}

static void test_argv(void **state) {
        _cleanup_(submit_options_done) SubmitOptions o;
        char *err = NULL;
        int first = -1;

        {
                char *argv[] = { (char *) "submit", (char *) "-Hn", (char *) "3", (char *) "--nice",
                                 (char *) "--exclusive", (char *) "--", (char *) "--not-an-option", NULL };
                submit_options_init(&o, NOW);
                o.sendmail_path = "/nonexistent/sendmail";
                assert_int_equal(submit_options_parse_argv(7, argv, &o, &first, &err), 0);
                assert_int_equal(first, 6);
                assert_true(o.req.hold);
                assert_int_equal(o.ntasks, 3);
                assert_int_equal(o.req.nice, 100);
                assert_true(o.req.exclusive);
                submit_options_done(&o);
        }
        {
                char *argv[] = { (char *) "submit", (char *) "-J", (char *) "x", (char *) "/bin/sleep",
                                 (char *) "-n", (char *) "5", NULL };
                submit_options_init(&o, NOW);
                o.sendmail_path = "/nonexistent/sendmail";
                assert_int_equal(submit_options_parse_argv(6, argv, &o, &first, &err), 0);
                assert_int_equal(first, 3);     /* options after the command are the command's */
                assert_int_equal(o.ntasks, 0);
                submit_options_done(&o);
        }
        {
                /* Slurm's bare job ids: afterany, alone or beside typed ones. */
                char *argv[] = { (char *) "submit", (char *) "--dependency=7", (char *) "-d",
                                 (char *) "8:9,afterok:10", NULL };
                submit_options_init(&o, NOW);
                o.sendmail_path = "/nonexistent/sendmail";
                assert_int_equal(submit_options_parse_argv(4, argv, &o, &first, &err), 0);
                assert_int_equal(o.req.n_dependencies, 4);
                for (size_t k = 0; k < 3; k++) {
                        assert_int_equal(o.req.dependencies[k].type, DEPENDENCY_AFTERANY);
                        assert_int_equal(o.req.dependencies[k].job_id, 7 + k);
                }
                assert_int_equal(o.req.dependencies[3].type, DEPENDENCY_AFTEROK);
                assert_int_equal(o.req.dependencies[3].job_id, 10);
                submit_options_done(&o);
        }
        {
                char *argv[] = { (char *) "submit", NULL };
                submit_options_init(&o, NOW);
                o.sendmail_path = "/nonexistent/sendmail";
                assert_int_equal(submit_options_parse_argv(1, argv, &o, &first, &err), 0);
                assert_int_equal(first, 1);
                submit_options_done(&o);
        }

        static const struct {
                const char *args[4];
                const char *error;
        } bad[] = {
                { { "--cpus=0" }, "--cpus=0: must be a number between 1 and 8192" },
                { { "-n", "x" }, "-n x: must be a number between 1 and 8192" },
                { { "--mem" }, "--mem: option requires a value" },
                { { "--hold=yes" }, "--hold=yes: option takes no value" },
                { { "--bogus" }, "--bogus: unknown option" },
                { { "-Z" }, "-Z: unknown option" },
                { { "--gpus=65" }, "--gpus=65: expected [TYPE:]COUNT with COUNT between 0 and 64" },
                { { "--gpus=a100:1,v100:1" }, "--gpus=a100:1,v100:1: one GPU type per job here (expected [TYPE:]COUNT)" },
                { { "--gres=gpu:1,mps:2" }, "--gres=gpu:1,mps:2: generic resource 'mps' is not available here: GPUs and their shards are the only ones (gpu[:TYPE][:COUNT], shard[:COUNT])" },
                { { "--gres=gpu:a b:1" }, "--gres=gpu:a b:1: invalid GPU type 'a b' (letters, digits, '_', '.', '-'; at most 64)" },
                { { "--gres-flags=one-task-per-sharing" }, "--gres-flags=one-task-per-sharing: expected enforce-binding or disable-binding" },
                { { "-C", "a100*2" }, "-C a100*2: invalid feature expression: names (letters, digits, '_', '.', '-') joined by & (and) and | (or), with parentheses, e.g. a100|h100 or gpu&nvlink (counts like a100*2 and [a|b] choose among nodes: not on one machine)" },
                { { "--licenses=matlab" }, "--licenses=matlab: option not supported" },
                { { "--time", "soon" }, "--time soon: invalid time (minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S)" },
                { { "--env", "NOEQ" }, "--env NOEQ: expected NAME=VALUE" },
                { { "--io-read-bw=10M" }, "--io-read-bw=10M: expected DEVICE:BYTES_PER_SEC with an absolute device path, e.g. /dev/vdb:10M" },
                { { "--io-weight=0" }, "--io-weight=0: must be a number between 1 and 10000" },
                { { "--nice=-10001" }, "--nice=-10001: must be a number between -10000 and 10000" },
                { { "-d", "afterok:x" }, "-d afterok:x: 'x' is not a job id" },
                { { "-d", "afterfoo:1" }, "-d afterfoo:1: unknown dependency type 'afterfoo' (after, afterany, afterok, afternotok)" },
                { { "-d", "1x" }, "-d 1x: '1x': expected TYPE:JOBID or JOBID" },
                { { "-d", "1:x" }, "-d 1:x: 'x' is not a job id" },
                { { "-d", "afterok:1?afterany:2" }, "-d afterok:1?afterany:2: '?' (any of) dependencies are not supported, only ',' (all of)" },
                { { "--array=1,6-7,1" }, "--array=1,6-7,1: expected START[-END[:STEP]][,...][%MAX], each index once" },
                { { "--array=1-" }, "--array=1-: expected START[-END[:STEP]][,...][%MAX], each index once" },
                { { "--mem=1G", "--mem-per-cpu=1G" }, "--mem-per-cpu=1G: --mem and --mem-per-cpu are mutually exclusive" },
                { { "--signal=USR1@90x" }, "--signal=USR1@90x: expected [B:]SIGNAL[@SECONDS], e.g. B:USR1@300" },
                { { "-M", "other" }, "-M other: not supported on a single machine (its cluster is its host name, or all)" },
                { { "-q", "bad queue" }, "-q bad queue: invalid name (letters, digits, '_', '.', '-'; at most 64)" },
                { { "--export=NONE,A" }, "--export=NONE,A: NONE cannot be combined with other entries" },
                { { "--exclusive=user" }, "--exclusive=user: only plain --exclusive is supported (the whole machine)" },
                { { "--begin=tomorrowish" }, "--begin=tomorrowish: expected now+SECONDS, now+DURATION, HH:MM[:SS] or YYYY-MM-DD[THH:MM[:SS]]" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *argv[6] = { (char *) "submit" };
                int argc = 1;

                for (size_t j = 0; bad[i].args[j]; j++)
                        argv[argc++] = (char *) bad[i].args[j];
                err = NULL;
                submit_options_init(&o, NOW);
                o.sendmail_path = "/nonexistent/sendmail";
                assert_int_equal(submit_options_parse_argv(argc, argv, &o, &first, &err), -EINVAL);
                if (!err || !streq(err, bad[i].error)) {
                        fprintf(stderr, "case %zu: got '%s'\n", i, strna(err));
                        fail();
                }
                free(err);
                submit_options_done(&o);
        }
}

static void test_finalize(void **state) {
        _cleanup_(submit_options_done) SubmitOptions o;
        char *env[] = { (char *) "HOME=/home/ann", (char *) "PATH=/bin", (char *) "BAD NAME=x",
                        (char *) "BASH_FUNC_f%%=() { :; }", NULL };
        char *err = NULL;

        /* Default: all of environ (valid entries), then --env on top. */
        {
                char *argv[] = { (char *) "submit", (char *) "--env=PATH=/opt/bin", (char *) "-c", (char *) "4",
                                 (char *) "--mem-per-cpu=100", (char *) "-o", (char *) "o.log", NULL };
                submit_options_init(&o, NOW);
                o.sendmail_path = "/nonexistent/sendmail";
                assert_int_equal(submit_options_parse_argv(7, argv, &o, NULL, &err), 0);
                assert_int_equal(strv_extend(&o.req.argv, "/bin/true"), 0);
                assert_int_equal(submit_options_finalize(&o, "/home/ann", env, &err), 0);
                assert_int_equal(strv_length(o.req.env), 3);
                assert_string_equal(o.req.env[0], "HOME=/home/ann");
                assert_string_equal(o.req.env[1], "PATH=/opt/bin");
                assert_string_equal(o.req.env[2], "BASH_FUNC_f%%=() { :; }");
                assert_true(o.req.memory == 400 * M);
                assert_null(o.req.stderr_path); /* the daemon's default: with stdout */
                submit_options_done(&o);
        }
        /* --export=VAR,VAR=val: only those. */
        {
                char *argv[] = { (char *) "submit", (char *) "--export=HOME,X=1,MISSING", NULL };
                submit_options_init(&o, NOW);
                o.sendmail_path = "/nonexistent/sendmail";
                assert_int_equal(submit_options_parse_argv(2, argv, &o, NULL, &err), 0);
                assert_int_equal(strv_extend(&o.req.argv, "/bin/true"), 0);
                assert_int_equal(submit_options_finalize(&o, "/", env, &err), 0);
                assert_int_equal(strv_length(o.req.env), 2);
                assert_string_equal(o.req.env[0], "HOME=/home/ann");
                assert_string_equal(o.req.env[1], "X=1");
                submit_options_done(&o);
        }
        /* Too many CPUs in the product. */
        {
                char *argv[] = { (char *) "submit", (char *) "-n", (char *) "100", (char *) "-c", (char *) "100", NULL };
                submit_options_init(&o, NOW);
                o.sendmail_path = "/nonexistent/sendmail";
                assert_int_equal(submit_options_parse_argv(5, argv, &o, NULL, &err), 0);
                assert_int_equal(strv_extend(&o.req.argv, "/bin/true"), 0);
                assert_int_equal(submit_options_finalize(&o, "/", NULL, &err), -EINVAL);
                assert_string_equal(err, "--ntasks x --cpus-per-task = 10000 CPUs, more than 8192");
                free(err);
                submit_options_done(&o);
        }
        /* No command nor script: the request is invalid. */
        {
                submit_options_init(&o, NOW);
                o.sendmail_path = "/nonexistent/sendmail";
                assert_int_equal(submit_options_finalize(&o, "/", NULL, &err), -EINVAL);
                assert_string_equal(err, "invalid job request: argv");
                free(err);
        }
}

static void test_begin_time(void **state) {
        uint64_t t;

        assert_int_equal(parse_begin_time("now", NOW, &t), 0);
        assert_int_equal(t, NOW);
        assert_int_equal(parse_begin_time("now+60", NOW, &t), 0);
        assert_int_equal(t, NOW + 60);
        assert_int_equal(parse_begin_time("now+2hours", NOW, &t), 0);
        assert_int_equal(t, NOW + 7200);
        assert_int_equal(parse_begin_time("2030-01-02T03:04:05", NOW, &t), 0);
        assert_true(t > (uint64_t) NOW);
        assert_int_equal(parse_begin_time("2030-01-02", NOW, &t), 0);
        /* A time of day is within the next 24 hours. */
        assert_int_equal(parse_begin_time("16:00", NOW, &t), 0);
        assert_true(t > (uint64_t) NOW && t <= (uint64_t) NOW + 86400 + 3600);
        assert_int_equal(parse_begin_time("now+1:00", NOW, &t), -EINVAL);
        assert_int_equal(parse_begin_time("25:00", NOW, &t), -EINVAL);
        assert_int_equal(parse_begin_time("", NOW, &t), -EINVAL);
}

static void test_option_table(void **state) {
        size_t n;
        const SubmitOption *t = submit_options_table(&n);

        /* Names and short letters are unique: one table, no ambiguity. */
        for (size_t i = 0; i < n; i++)
                for (size_t j = i + 1; j < n; j++) {
                        assert_false(streq(t[i].long_name, t[j].long_name));
                        assert_true(t[i].short_name == 0 || t[i].short_name != t[j].short_name);
                }
        assert_ptr_equal(submit_option_find_short('p'), submit_option_find_long("partition", 9));
        assert_null(submit_option_find_long("cpu", 3)); /* no prefix matching */
}

/* The paths a job will use, checked as the submitter: each row is one request against a
 * tree where /locked cannot be entered, /home/ann/ro cannot be written and
 * /home/ann/secret cannot be read. Returns the number of rows that went wrong. */
static int check_path_rows(int fd) {
        static const struct {
                const char *workdir, *in, *out, *err;
                int want;
                const char *message;
        } prows[] = {
                { "/home/ann", NULL, NULL, NULL, 0, NULL },
                { "/locked", NULL, NULL, NULL, -EACCES,
                  "cannot change to the working directory /locked: Permission denied" },
                { "/missing", NULL, NULL, NULL, -ENOENT,
                  "cannot change to the working directory /missing: No such file or directory" },
                { "/home/ann/in", NULL, NULL, NULL, -ENOTDIR,
                  "cannot change to the working directory /home/ann/in: Not a directory" },
                { "/home/ann", NULL, "ro/out", NULL, -EACCES,
                  "cannot open the output file /home/ann/ro/out: Permission denied" },
                { "/home/ann", NULL, "ro/%j.out", NULL, -EACCES,
                  "cannot open the output file /home/ann/ro/%j.out: Permission denied" },
                { "/home/ann", NULL, "ro/open", NULL, 0, NULL },  /* exists, writable */
                { "/home/ann", NULL, "ro", NULL, -EISDIR,
                  "cannot open the output file /home/ann/ro: Is a directory" },
                { "/home/ann", NULL, "out-%j", "/home/ann/err", 0, NULL },
                { "/home/ann", NULL, "%u/out", NULL, 0, NULL },  /* corrald's to expand */
                { "/home/ann", NULL, "/nodir/out", NULL, -ENOENT,
                  "cannot open the output file /nodir/out: No such file or directory" },
                { "/home/ann", NULL, NULL, "/locked/err", -EACCES,
                  "cannot open the error file /locked/err: Permission denied" },
                { "/home/ann", "in", NULL, NULL, 0, NULL },
                { "/home/ann", "secret", NULL, NULL, -EACCES,
                  "cannot open the input file /home/ann/secret: Permission denied" },
                { "/home/ann", "/home/ann/none", NULL, NULL, -ENOENT,
                  "cannot open the input file /home/ann/none: No such file or directory" },
                { "/", NULL, NULL, NULL, 0, NULL },
        };
        int bad = 0;

        for (size_t i = 0; i < ELEMENTSOF(prows); i++) {
                SubmitRequest req = { .workdir = (char *) prows[i].workdir, .stdin_path = (char *) prows[i].in,
                                      .stdout_path = (char *) prows[i].out, .stderr_path = (char *) prows[i].err };
                char *error = NULL;
                int r = submit_check_paths(&req, fd, &error);

                if (r != prows[i].want || (prows[i].message ? !error || !streq(error, prows[i].message) : !!error)) {
                        fprintf(stderr, "row %zu: got %d \"%s\", want %d \"%s\"\n", i, r, error ? error : "",
                                prows[i].want, prows[i].message ? prows[i].message : "");
                        bad++;
                }
                free(error);
        }
        return bad;
}

static void test_check_paths(void **state) {
        char root[] = "/tmp/test-check-paths-XXXXXX", cmd[256];
        bool as_root = geteuid() == 0;
        int fd, status;
        pid_t pid;

        assert_non_null(mkdtemp(root));
        assert_int_equal(chmod(root, 0755), 0);
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(mkdirat(fd, "home", 0755), 0);
        assert_int_equal(mkdirat(fd, "home/ann", 0777), 0);
        assert_int_equal(fchmodat(fd, "home/ann", 0777, 0), 0);
        assert_int_equal(mkdirat(fd, "home/ann/ro", 0755), 0);
        assert_int_equal(mkdirat(fd, "locked", 0700), 0);
        assert_true(close(openat(fd, "home/ann/in", O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) == 0);
        assert_true(close(openat(fd, "home/ann/secret", O_CREAT | O_WRONLY | O_CLOEXEC, 0600)) == 0);
        assert_true(close(openat(fd, "home/ann/ro/open", O_CREAT | O_WRONLY | O_CLOEXEC, 0666)) == 0);
        assert_int_equal(fchmodat(fd, "home/ann/ro/open", 0666, 0), 0);
        if (!as_root) {
                /* Its owner: take the rights away instead. */
                assert_int_equal(fchmodat(fd, "home/ann/ro", 0555, 0), 0);
                assert_int_equal(fchmodat(fd, "locked", 0, 0), 0);
                assert_int_equal(fchmodat(fd, "home/ann/secret", 0, 0), 0);
                assert_int_equal(check_path_rows(fd), 0);
        } else {
                /* root may do anything: the rows run as nobody, whom the modes stop. */
                pid = fork();
                assert_true(pid >= 0);
                if (pid == 0) {
                        if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                                _exit(100);
                        _exit(check_path_rows(fd) > 0 ? 1 : 0);
                }
                assert_int_equal(waitpid(pid, &status, 0), pid);
                assert_true(WIFEXITED(status));
                assert_int_equal(WEXITSTATUS(status), 0);
        }
        close(fd);
        snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s'; rm -rf '%s'", root, root);
        assert_int_equal(system(cmd), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_slurm_basic),
                cmocka_unit_test(test_slurm_mem_per_cpu),
                cmocka_unit_test(test_mail),
                cmocka_unit_test(test_slurm_unsupported),
                cmocka_unit_test(test_pbs_torque),
                cmocka_unit_test(test_pbs_pro_select),
                cmocka_unit_test(test_pbs_unsupported),
                cmocka_unit_test(test_gpu_requests),
                cmocka_unit_test(test_shard_requests),
                cmocka_unit_test(test_real_gpu_scripts),
                cmocka_unit_test(test_native_directives),
                cmocka_unit_test(test_command_line_wins),
                cmocka_unit_test(test_argv),
                cmocka_unit_test(test_finalize),
                cmocka_unit_test(test_begin_time),
                cmocka_unit_test(test_option_table),
                cmocka_unit_test(test_directive_table),
                cmocka_unit_test(test_pbs_output_dir),
                cmocka_unit_test(test_check_paths),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
