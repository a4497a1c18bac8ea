/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Whole corral commands against a fake corrald: a child process on a unix socket in a
 * tmpdir that checks each request it gets and answers with canned replies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/logs-file.h"
#include "fd-util.h"
#include "proto/job-request.h"
#include "proto/message.h"
#include "strv.h"

typedef struct Exchange {
        CorralMethod method;
        /* Checks the request's parameters in the child; returns false to fail the test. */
        bool (*check)(json_object *parameters, bool more);
        const char *replies[4];         /* sent in order, NULL-terminated */
} Exchange;

static char tmpdir[] = "/tmp/test-cli-client-XXXXXX";
static char socket_path[128];

static int setup(void **state) {
        assert_non_null(mkdtemp(tmpdir));
        snprintf(socket_path, sizeof(socket_path), "%s/sock", tmpdir);
        setenv("CORRAL_SOCKET", socket_path, 1);
        return 0;
}

static int teardown(void **state) {
        unlink(socket_path);
        rmdir(tmpdir);
        return 0;
}

static int listen_socket(void) {
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        int fd;

        unlink(socket_path);
        strcpy(a.sun_path, socket_path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &a, sizeof(a)), 0);
        assert_int_equal(listen(fd, 4), 0);
        return fd;
}

/* The child's whole life: no cmocka in here, only exit statuses. */
_noreturn_ static void serve(int listen_fd, const Exchange *ex, size_t n, bool hang) {
        _cleanup_message_reader_ MessageReader *reader = message_reader_new(CORRAL_MESSAGE_SIZE_MAX);
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

        if (fd < 0 || !reader)
                _exit(10);
        /* A client that waits for an answer this server gives only after a later request
         * (test_wait_pipelined) makes it give up instead of hanging both. */
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval) { .tv_sec = 5 }, sizeof(struct timeval)) < 0)
                _exit(10);
        if (hang)
                for (;;)
                        pause();
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *text = NULL;
                Request req = {};
                CorralError e;
                size_t len;
                int r;

                while ((r = message_reader_next(reader, &text, &len)) == 0)
                        if (message_reader_fill(reader, fd) <= 0)
                                _exit(11);
                if (r < 0 || request_parse(text, len, &req, &e) < 0)
                        _exit(12);
                if (req.method != ex[i].method)
                        _exit(13);
                if (ex[i].check && !ex[i].check(req.parameters, req.more))
                        _exit(14);
                request_done(&req);
                for (size_t k = 0; ex[i].replies[k]; k++)
                        if (loop_write(fd, ex[i].replies[k], strlen(ex[i].replies[k]) + 1) < 0)
                                _exit(15);
        }
        _exit(0);
}

static pid_t start_server(const Exchange *ex, size_t n, bool hang) {
        int fd = listen_socket();
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0)
                serve(fd, ex, n, hang);
        close(fd);
        return pid;
}

static int server_status(pid_t pid) {
        int status;

        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        return WEXITSTATUS(status);
}

/* sbatch(1) (slurm/sbatch.c) rather than corral: the same submit_run(). */
static bool run_as_sbatch;

/* Runs corral with args, capturing stdout into *ret_out. */
static int run(const char *const *const_args, char **ret_out) {
        _cleanup_strv_free_ char **args = strv_copy((char *const *) const_args);
        char path[160];
        int saved, fd, status;
        size_t size;

        assert_non_null(args);
        *ret_out = mfree(*ret_out); /* tests run several commands into one buffer */
        snprintf(path, sizeof(path), "%s/stdout", tmpdir);
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        fflush(stdout);
        saved = dup(STDOUT_FILENO);
        assert_true(saved >= 0);
        assert_true(dup2(fd, STDOUT_FILENO) >= 0);

        if (run_as_sbatch) {
                Cli cli = { .verb = "sbatch", .timeout_ms = CLIENT_TIMEOUT_MS_DEFAULT };
                status = submit_run(&cli, (int) strv_length(args), args, true);
                cli_done(&cli);
        } else
                status = corral_run((int) strv_length(args), args);

        fflush(stdout);
        assert_true(dup2(saved, STDOUT_FILENO) >= 0);
        close(saved);
        close(fd);
        assert_int_equal(read_file_at(AT_FDCWD, path, 1 << 20, ret_out, &size), 0);
        unlink(path);
        return status;
}

#define ARGS(...) ((const char *const[]) { "corral", __VA_ARGS__, NULL })

static bool check_submit(json_object *p, bool more) {
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        const char *bad;

        if (more || submit_request_from_json(p, &req, &bad) < 0)
                return false;
        return strv_length(req.argv) == 2 && streq(req.argv[0], "sleep") && streq(req.argv[1], "1") &&
               !req.script && req.cpus == 6 && req.memory == (UINT64_C(1) << 30) && streq_ptr(req.name, "sleep") &&
               cwd && streq_ptr(req.workdir, cwd) &&
               /* --export defaults to ALL, as sbatch */
               streq_ptr(strv_env_get(req.env, "CLI_TEST_VAR"), "yes");
}

static void test_submit(void **state) {
        static const Exchange ex[] = {
                { CORRAL_METHOD_SUBMIT, check_submit, { "{\"parameters\":{\"job_id\":42}}" } },
        };
        _cleanup_free_ char *out = NULL;
        pid_t pid;

        setenv("CLI_TEST_VAR", "yes", 1);
        pid = start_server(ex, ELEMENTSOF(ex), false);
        assert_int_equal(run(ARGS("submit", "-n", "3", "-c2", "--mem=1G", "sleep", "1"), &out), 0);
        assert_int_equal(server_status(pid), 0);
        assert_string_equal(out, "Submitted batch job 42\n");
}

static bool check_sbatch_wrap(json_object *p, bool more) {
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
        _cleanup_free_ char *cwd = getcwd(NULL, 0), *submit_dir = NULL;
        const char *bad;

        if (more || submit_request_from_json(p, &req, &bad) < 0 || !cwd ||
            asprintf(&submit_dir, "SLURM_SUBMIT_DIR=%s", cwd) < 0)
                return false;
        return !req.argv &&
               streq_ptr(req.script, "#!/bin/sh\n# This script was generated by sbatch --wrap.\n\necho 'a b'\n") &&
               streq_ptr(req.name, "wrapped") && req.cpus == 2 && !req.queue && /* -q is --qos for sbatch */
               streq_ptr(req.stdout_path, "slurm-%j.out") && !req.stderr_path &&
               strv_contains(req.env, submit_dir) && strv_contains(req.env, "SLURM_CPUS_PER_TASK=2") &&
               strv_contains(req.env, "SLURM_NTASKS=1") && strv_contains(req.env, "SLURM_JOB_QOS=high");
}

/* sbatch goes through corral submit's code: --wrap, Slurm's -q and default output file,
 * "Submitted batch job N" and --parsable. */
static void test_sbatch(void **state) {
        static const Exchange ex[] = {
                { CORRAL_METHOD_SUBMIT, check_sbatch_wrap, { "{\"parameters\":{\"job_id\":42}}" } },
        };
        _cleanup_free_ char *out = NULL;
        pid_t pid;

        run_as_sbatch = true;
        pid = start_server(ex, ELEMENTSOF(ex), false);
        assert_int_equal(run(((const char *const[]) { "sbatch", "-J", "wrapped", "-c", "2", "-q", "high", "-Q",
                                                      "--wrap", "echo 'a b'", NULL }), &out), 0);
        assert_int_equal(server_status(pid), 0);
        assert_string_equal(out, "Submitted batch job 42\n");

        pid = start_server(ex, ELEMENTSOF(ex), false);
        assert_int_equal(run(((const char *const[]) { "sbatch", "--parsable", "-J", "wrapped", "-c2", "-qhigh",
                                                      "--wrap=echo 'a b'", NULL }), &out), 0);
        assert_int_equal(server_status(pid), 0);
        assert_string_equal(out, "42\n");

        /* Refused before anything is sent: arguments with --wrap, a generic resource other
         * than GPUs; exit 1,
         * as Slurm's sbatch on any error (corral submit: CLI_EXIT_USAGE). */
        assert_int_equal(run(((const char *const[]) { "sbatch", "--wrap=true", "extra", NULL }), &out), 1);
        assert_int_equal(run(((const char *const[]) { "sbatch", "--gres=mps:1", "--wrap=true", NULL }), &out), 1);
        assert_string_equal(out, "");
        run_as_sbatch = false;
}

static bool check_array(json_object *p, bool more) {
        json_object *a;
        return json_object_object_get_ex(p, "array", &a);
}

static void test_submit_array_parsable(void **state) {
        static const Exchange ex[] = {
                { CORRAL_METHOD_SUBMIT, check_array, { "{\"parameters\":{\"job_id\":7,\"job_ids\":[7,8,9]}}" } },
        };
        _cleanup_free_ char *out = NULL;
        pid_t pid = start_server(ex, ELEMENTSOF(ex), false);

        assert_int_equal(run(ARGS("submit", "--parsable", "--array=1-3", "--", "true"), &out), 0);
        assert_int_equal(server_status(pid), 0);
        assert_string_equal(out, "7\n");
}

static bool check_script(json_object *p, bool more) {
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
        const char *bad;

        if (submit_request_from_json(p, &req, &bad) < 0)
                return false;
        /* -n on the command line beats the script's #SBATCH -n 8 */
        return req.script && strstr(req.script, "#SBATCH") && !req.argv && req.cpus == 2 &&
               req.walltime_sec == 3600 && streq_ptr(req.name, "job.sh") && !req.env;
}

static void test_submit_script(void **state) {
        static const Exchange ex[] = {
                { CORRAL_METHOD_SUBMIT, check_script, { "{\"parameters\":{\"job_id\":3}}" } },
        };
        _cleanup_free_ char *out = NULL, *script = NULL;
        pid_t pid;
        FILE *f;

        assert_true(asprintf(&script, "%s/job.sh", tmpdir) > 0);
        f = fopen(script, "we");
        assert_non_null(f);
        fputs("#!/bin/sh\n#SBATCH -n 8\n#PBS -l walltime=01:00:00\nhostname\n", f);
        fclose(f);

        pid = start_server(ex, ELEMENTSOF(ex), false);
        assert_int_equal(run(ARGS("submit", "-n", "2", "--export=NONE", script), &out), 0);
        assert_int_equal(server_status(pid), 0);
        assert_string_equal(out, "Submitted batch job 3\n");
        unlink(script);
}

static void test_submit_bad_directive(void **state) {
        _cleanup_free_ char *out = NULL, *script = NULL;
        FILE *f;

        /* No server: a directive error must stop before connecting (else: exit 3). */
        assert_true(asprintf(&script, "%s/bad.sh", tmpdir) > 0);
        f = fopen(script, "we");
        assert_non_null(f);
        fputs("#!/bin/sh\n#SBATCH --gres=gpu:1:2:3\nhostname\n", f);
        fclose(f);
        unlink(socket_path);
        assert_int_equal(run(ARGS("submit", script), &out), 2);
        assert_int_equal(run(ARGS("submit", "--mem=lots", "true"), &out), 2);
        assert_int_equal(run(ARGS("submit", "--frobnicate", "true"), &out), 2);
        assert_string_equal(out, "");
        unlink(script);
}

static bool check_test_only(json_object *p, bool more) {
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
        const char *bad;

        return !more && submit_request_from_json(p, &req, &bad) >= 0 && req.cpus == 4 && req.script;
}

/* --test-only: the request printed, corrald's TestSubmit asked (never Submit), the exit
 * status its answer; without corrald the request is still checked and printed. */
static void test_submit_test_only(void **state) {
        static const Exchange accepted[] = {
                { CORRAL_METHOD_TEST_SUBMIT, check_test_only,
                  { "{\"parameters\":{\"accepted\":true,\"queue\":\"normal\",\"project\":\"geo\",\"tasks\":1,"
                    "\"reason\":\"Resources\",\"est_start\":1900000000}}" } },
        };
        static const Exchange refused[] = {
                { CORRAL_METHOD_TEST_SUBMIT, NULL,
                  { "{\"error\":\"io.corral.Manager.InvalidParameter\",\"parameters\":{\"parameter\":\"cpus\","
                    "\"message\":\"more CPUs than this machine has\"}}" } },
        };
        static const Exchange json[] = {
                { CORRAL_METHOD_TEST_SUBMIT, NULL, { "{\"parameters\":{\"accepted\":true,\"est_start\":1900000000}}" } },
        };
        _cleanup_free_ char *out = NULL, *script = NULL, *bad = NULL;
        json_object *o, *v;
        pid_t pid;
        FILE *f;

        assert_true(asprintf(&script, "%s/job.sh", tmpdir) > 0);
        f = fopen(script, "we");
        assert_non_null(f);
        fputs("#!/bin/sh\n#SBATCH -n 4\n#SBATCH -t 30\nhostname\n", f);
        fclose(f);
        assert_true(asprintf(&bad, "%s/bad.sh", tmpdir) > 0);
        f = fopen(bad, "we");
        assert_non_null(f);
        fputs("#!/bin/sh\n#SBATCH -n 0\nhostname\n", f);
        fclose(f);

        pid = start_server(accepted, ELEMENTSOF(accepted), false);
        assert_int_equal(run(ARGS("submit", "--test-only", script), &out), 0);
        assert_int_equal(server_status(pid), 0);
        assert_non_null(strstr(out, "CPUs:         4\n"));
        assert_non_null(strstr(out, "Walltime:     30:00\n"));
        assert_non_null(strstr(out, "job.sh (4 lines"));
        assert_non_null(strstr(out, "Accepted:     yes, in queue normal, project geo\n"));
        assert_non_null(strstr(out, "(estimated; waits for Resources)"));

        /* sbatch --test-only asks the same, and answers in Slurm's words on stderr. */
        {
                _cleanup_free_ char *err = NULL;
                char path[160];
                size_t size;
                int fd, saved;

                snprintf(path, sizeof(path), "%s/stderr", tmpdir);
                fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                assert_true(fd >= 0);
                saved = dup(STDERR_FILENO);
                assert_true(saved >= 0 && dup2(fd, STDERR_FILENO) >= 0);
                pid = start_server(accepted, ELEMENTSOF(accepted), false);
                run_as_sbatch = true;
                assert_int_equal(run(((const char *const[]) { "sbatch", "--test-only", script, NULL }), &out), 0);
                run_as_sbatch = false;
                assert_true(dup2(saved, STDERR_FILENO) >= 0);
                close(saved);
                close(fd);
                assert_int_equal(server_status(pid), 0);
                assert_string_equal(out, "");
                assert_int_equal(read_file_at(AT_FDCWD, path, 1 << 20, &err, &size), 0);
                unlink(path);
                if (!strstr(err, "sbatch: Job to start at ") || !strstr(err, " using 4 processors on nodes ") ||
                    !strstr(err, " in partition normal\n"))
                        fail_msg("sbatch --test-only said: %s", err);
        }

        pid = start_server(refused, ELEMENTSOF(refused), false);
        assert_int_equal(run(ARGS("submit", "--test-only", "-n", "64", "--", "true"), &out), 2);
        assert_int_equal(server_status(pid), 0);
        assert_non_null(strstr(out, "Would not be accepted: "));
        assert_non_null(strstr(out, "more CPUs than this machine has"));

        pid = start_server(json, ELEMENTSOF(json), false);
        assert_int_equal(run(ARGS("submit", "--test-only", "--json", script), &out), 0);
        assert_int_equal(server_status(pid), 0);
        o = json_tokener_parse(out);
        assert_non_null(o);
        assert_true(json_object_object_get_ex(o, "request", &v) && json_object_object_get_ex(v, "cpus", &v) &&
                    json_object_get_int(v) == 4);
        assert_true(json_object_object_get_ex(o, "accepted", &v) && json_object_get_boolean(v));
        assert_true(json_object_object_get_ex(o, "corrald", &v) && json_object_object_get_ex(v, "est_start", &v));
        json_object_put(o);

        /* No corrald: still parsed and printed, the estimate said to be unavailable. */
        unlink(socket_path);
        assert_int_equal(run(ARGS("submit", "--test-only", script), &out), 0);
        assert_non_null(strstr(out, "CPUs:         4\n"));
        assert_non_null(strstr(out, "Estimate:     unavailable: corrald is not reachable"));
        assert_int_equal(run(ARGS("submit", "--test-only", "--json", script), &out), 0);
        assert_non_null(strstr(out, "\"estimate_unavailable\""));
        /* A bad script is refused before anything is printed or asked. */
        assert_int_equal(run(ARGS("submit", "--test-only", bad), &out), 2);
        assert_string_equal(out, "");
        unlink(script);
        unlink(bad);
}

static bool check_job_5(json_object *p, bool more) {
        json_object *id;
        return json_object_object_get_ex(p, "job_id", &id) && json_object_get_int64(id) == 5;
}

static bool check_job_9(json_object *p, bool more) {
        json_object *v;
        return !more && json_object_object_get_ex(p, "job_id", &v) && json_object_get_uint64(v) == 9;
}

static void test_cancel_errors(void **state) {
        static const Exchange ex[] = {
                { CORRAL_METHOD_CANCEL, check_job_5,
                  { "{\"error\":\"io.corral.Manager.NoSuchJob\",\"parameters\":{\"job_id\":5}}" } },
                /* the next job is still cancelled */
                { CORRAL_METHOD_CANCEL, NULL, { "{\"parameters\":{}}" } },
        };
        _cleanup_free_ char *out = NULL;
        pid_t pid = start_server(ex, ELEMENTSOF(ex), false);

        assert_int_equal(run(ARGS("cancel", "5", "6"), &out), 1);
        assert_int_equal(server_status(pid), 0);
        assert_string_equal(out, "");
}

static void test_invalid_parameter_is_usage(void **state) {
        static const Exchange ex[] = {
                { CORRAL_METHOD_SUBMIT, NULL,
                  { "{\"error\":\"io.corral.Manager.InvalidParameter\",\"parameters\":{\"parameter\":\"queue\"}}" } },
        };
        _cleanup_free_ char *out = NULL;
        pid_t pid = start_server(ex, ELEMENTSOF(ex), false);

        assert_int_equal(run(ARGS("submit", "-q", "nosuch", "true"), &out), 2);
        assert_int_equal(server_status(pid), 0);
}

static bool check_wait(json_object *p, bool more) {
        return more && check_job_5(p, more);
}

static bool check_job_6(json_object *p, bool more) {
        json_object *id;
        return json_object_object_get_ex(p, "job_id", &id) && json_object_get_int64(id) == 6;
}

/* --json prints every change: a stream. */
static void test_wait_stream(void **state) {
        static const Exchange ex[] = {
                { CORRAL_METHOD_WAIT, check_wait,
                  { "{\"parameters\":{\"job\":{\"id\":5,\"state\":\"RUNNING\",\"future_field\":1}},\"continues\":true}",
                    "{\"parameters\":{\"job\":{\"id\":5,\"state\":\"FAILED\",\"exit_code\":3}}}" } },
        };
        _cleanup_free_ char *out = NULL;
        pid_t pid = start_server(ex, ELEMENTSOF(ex), false);

        assert_int_equal(run(ARGS("wait", "--json", "5"), &out), 3);
        assert_non_null(strstr(out, "RUNNING"));
        assert_int_equal(server_status(pid), 0);
}

/* Without --json one answer per job, the calls of all jobs in flight at once: this
 * server reads both before it answers either, and answers in the order the jobs end (6
 * first), an error naming its job among them. */
static void test_wait_pipelined(void **state) {
        static const Exchange ex[] = {
                { CORRAL_METHOD_WAIT, check_job_5, {} },
                { CORRAL_METHOD_WAIT, check_job_6, {} },
                { CORRAL_METHOD_WAIT, check_job_9,
                  { "{\"parameters\":{\"job\":{\"id\":6,\"state\":\"COMPLETED\",\"exit_code\":0}}}",
                    "{\"error\":\"io.corral.Manager.PermissionDenied\",\"parameters\":{\"job_id\":9,\"message\":\"no\"}}",
                    "{\"parameters\":{\"job\":{\"id\":5,\"state\":\"FAILED\",\"exit_code\":7}}}" } },
        };
        _cleanup_free_ char *out = NULL;
        pid_t pid = start_server(ex, ELEMENTSOF(ex), false);

        assert_int_equal(run(ARGS("wait", "5", "6", "9"), &out), 7);
        assert_int_equal(server_status(pid), 0);
}

static void test_queue_roundtrip(void **state) {
        static const Exchange ex[] = {
                { CORRAL_METHOD_LIST, NULL,
                  { "{\"parameters\":{\"jobs\":[{\"id\":9,\"name\":\"x\",\"user\":\"ann\",\"state\":\"PENDING\","
                    "\"cpus\":1,\"est_start\":\"soon\",\"priority\":2.5}]}}" } },
        };
        _cleanup_free_ char *out = NULL;
        pid_t pid = start_server(ex, ELEMENTSOF(ex), false);

        assert_int_equal(run(ARGS("queue"), &out), 0);
        assert_int_equal(server_status(pid), 0);
        assert_non_null(strstr(out, "eligible jobs"));
        assert_non_null(strstr(out, "1 eligible job\n"));
        assert_non_null(strstr(out, "0 active jobs"));
        assert_non_null(strstr(out, "Total jobs: 1\n"));
}

/* --limit and --after: the first page asks for as many as are left and from where; the
 * second page, asked for because corrald's first was short (its time budget), makes up
 * the count; what is left is told, not fetched. */
static bool check_page1(json_object *p, bool more) {
        json_object *v;

        return !more && json_object_object_get_ex(p, "after_id", &v) && json_object_get_int64(v) == 100 &&
               json_object_object_get_ex(p, "limit", &v) && json_object_get_int64(v) == 2;
}

static bool check_page2(json_object *p, bool more) {
        json_object *v;

        return !more && json_object_object_get_ex(p, "after_id", &v) && json_object_get_int64(v) == 101 &&
               json_object_object_get_ex(p, "limit", &v) && json_object_get_int64(v) == 1;
}

static bool check_one(json_object *p, bool more) {
        json_object *v;

        return !more && json_object_object_get_ex(p, "limit", &v) && json_object_get_int64(v) == 1;
}

static void test_queue_limit_after(void **state) {
        static const Exchange ex_one[] = {
                { CORRAL_METHOD_LIST, check_one,
                  { "{\"parameters\":{\"jobs\":[{\"id\":101,\"user\":\"ann\",\"state\":\"PENDING\",\"cpus\":1}],"
                    "\"next_after_id\":101}}" } },
        };
        static const Exchange ex[] = {
                { CORRAL_METHOD_LIST, check_page1,
                  { "{\"parameters\":{\"jobs\":[{\"id\":101,\"user\":\"ann\",\"state\":\"PENDING\",\"cpus\":1}],"
                    "\"next_after_id\":101}}" } },
                { CORRAL_METHOD_LIST, check_page2,
                  { "{\"parameters\":{\"jobs\":[{\"id\":102,\"user\":\"ann\",\"state\":\"PENDING\",\"cpus\":1}],"
                    "\"next_after_id\":102}}" } },
        };
        _cleanup_free_ char *out = NULL;
        json_object *o, *v;
        pid_t pid = start_server(ex, ELEMENTSOF(ex), false);

        assert_int_equal(run(ARGS("queue", "--json", "--after", "100", "--limit", "2"), &out), 0);
        assert_int_equal(server_status(pid), 0);
        o = json_tokener_parse(out);
        assert_non_null(o);
        assert_true(json_object_object_get_ex(o, "jobs", &v));
        assert_int_equal(json_object_array_length(v), 2);
        assert_true(json_object_object_get_ex(o, "next_after_id", &v));
        assert_int_equal(json_object_get_int64(v), 102);
        json_object_put(o);

        /* One page of one: ex's second reply would be a second call, which must not come. */
        pid = start_server(ex_one, ELEMENTSOF(ex_one), false);
        assert_int_equal(run(ARGS("queue", "--after", "100", "--limit", "1"), &out), 0);
        assert_int_equal(server_status(pid), 0);
        assert_non_null(strstr(out, "More jobs after job 101: corral queue --after 101\n"));

        assert_int_equal(run(ARGS("queue", "--limit", "0"), &out), CLI_EXIT_USAGE);
        assert_int_equal(run(ARGS("queue", "--after", "x"), &out), CLI_EXIT_USAGE);
}

/* corral show prints the job's history, one change a line, who acted and why; an event
 * a newer corrald names is printed by its name. */
static void test_show_history(void **state) {
        static const Exchange show[] = {
                { CORRAL_METHOD_SHOW, check_job_9,
                  { "{\"parameters\":{\"job\":{\"id\":9,\"user\":\"ann\",\"state\":\"RUNNING\",\"cpus\":1,"
                    "\"history\":[{\"time\":1764300000,\"state\":\"HELD\",\"event\":\"submit\"},"
                    "{\"time\":1764300060,\"state\":\"PENDING\",\"event\":\"release\",\"by\":\"admin\"},"
                    "{\"time\":1764300070,\"state\":\"SUSPENDED\",\"event\":\"suspend\",\"by\":\"scheduler\","
                    "\"reason\":\"Preempted\"},"
                    "{\"time\":1764300080,\"state\":\"RUNNING\",\"event\":\"teleport\"}]}}}" } },
        };
        _cleanup_free_ char *out = NULL;
        pid_t pid = start_server(show, ELEMENTSOF(show), false);

        assert_int_equal(run(ARGS("show", "9"), &out), 0);
        assert_int_equal(server_status(pid), 0);
        assert_non_null(strstr(out, "       History: "));
        assert_non_null(strstr(out, "  HELD          submitted\n"));
        assert_non_null(strstr(out, "  PENDING       released by an administrator\n"));
        assert_non_null(strstr(out, "  SUSPENDED     suspended by the scheduler (preemption) (Preempted)\n"));
        assert_non_null(strstr(out, "  RUNNING       teleport\n"));
        assert_null(strstr(out, "  : "));
}

/* A name corrald stored before it refused control characters, or one a newer daemon
 * sends: what reaches the terminal is escaped, in the queue and in show. */
static void test_stored_control_characters_escaped(void **state) {
        static const Exchange list[] = {
                { CORRAL_METHOD_LIST, NULL,
                  { "{\"parameters\":{\"jobs\":[{\"id\":9,\"name\":\"x\\u009b31mred\\u001b[2J\",\"user\":\"ann\","
                    "\"state\":\"PENDING\",\"cpus\":1}]}}" } },
        };
        static const Exchange show[] = {
                { CORRAL_METHOD_SHOW, check_job_9,
                  { "{\"parameters\":{\"job\":{\"id\":9,\"name\":\"x\\u009b31mred\",\"user\":\"ann\","
                    "\"state\":\"PENDING\",\"cpus\":1,\"workdir\":\"/tmp/\\u001b]0;t\\u0007\",\"argv\":[\"a\"],"
                    "\"env\":[]}}}" } },
        };
        _cleanup_free_ char *out = NULL;
        pid_t pid = start_server(list, ELEMENTSOF(list), false);

        assert_int_equal(run(ARGS("queue"), &out), 0);
        assert_int_equal(server_status(pid), 0);
        assert_non_null(strstr(out, "x\\u009b31mred\\x1b[2J"));
        assert_null(strstr(out, "\xc2\x9b"));
        assert_null(strchr(out, '\x1b'));

        pid = start_server(show, ELEMENTSOF(show), false);
        assert_int_equal(run(ARGS("show", "9"), &out), 0);
        assert_int_equal(server_status(pid), 0);
        assert_non_null(strstr(out, "Name: x\\u009b31mred\n"));
        assert_non_null(strstr(out, "WorkDir: /tmp/\\x1b]0;t\\x07\n"));
        assert_null(strstr(out, "\xc2\x9b"));
        assert_null(strchr(out, '\x1b'));
}

/* The daemon's warning (its configuration on disk does not load) on stderr, once, beside
 * the normal output. */
static void test_reply_warning(void **state) {
        static const Exchange ex[] = {
                { CORRAL_METHOD_LIST, NULL,
                  { "{\"parameters\":{\"jobs\":[]},\"warning\":\"the configuration on disk does not load "
                    "(/etc/corral/corral.conf.d/typo.conf:3: unknown key)\"}" } },
        };
        _cleanup_free_ char *out = NULL, *err = NULL;
        char path[160];
        size_t size;
        int fd, saved;
        pid_t pid;

        snprintf(path, sizeof(path), "%s/stderr", tmpdir);
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        saved = dup(STDERR_FILENO);
        assert_true(saved >= 0 && dup2(fd, STDERR_FILENO) >= 0);
        pid = start_server(ex, ELEMENTSOF(ex), false);
        assert_int_equal(run(ARGS("queue"), &out), 0);
        assert_true(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
        close(fd);
        assert_int_equal(server_status(pid), 0);
        assert_non_null(strstr(out, "Total jobs: 0\n"));
        assert_null(strstr(out, "warning"));
        assert_int_equal(read_file_at(AT_FDCWD, path, 1 << 20, &err, &size), 0);
        unlink(path);
        if (!strstr(err, "warning: the configuration on disk does not load (/etc/corral/corral.conf.d/typo.conf:3"))
                fail_msg("stderr: %s", err);
}

static void test_unreachable(void **state) {
        _cleanup_free_ char *out = NULL;

        unlink(socket_path);
        assert_int_equal(run(ARGS("queue"), &out), 3);
        assert_int_equal(run(ARGS("cancel", "1"), &out), 3);
        assert_int_equal(run(ARGS("frobnicate"), &out), 2);
        assert_int_equal(run(ARGS("cancel", "x"), &out), 2);
        assert_int_equal(run(ARGS("--version"), &out), 0);
        assert_non_null(strstr(out, PACKAGE_VERSION));
}

static void test_hangup_and_timeout(void **state) {
        static const Exchange none[] = {};
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_free_ char *out = NULL;
        Client *c = NULL;
        pid_t pid;

        /* The daemon hangs up without answering. */
        pid = start_server(none, 0, false);
        assert_int_equal(run(ARGS("info"), &out), 3);
        assert_int_equal(server_status(pid), 0);

        /* The daemon accepts and never answers: the call gives up at its deadline. */
        pid = start_server(none, 0, true);
        assert_int_equal(client_connect(socket_path, 1000, &c), 0);
        assert_int_equal(client_send(c, CORRAL_METHOD_GET_INFO, NULL, false, 1000), 0);
        assert_int_equal(client_receive(c, 200, &reply), -ETIMEDOUT);
        client_free(c);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);

        assert_int_equal(client_connect("/nonexistent/sock", 1000, &c), -ENOENT);
        {
                char long_path[200];
                memset(long_path, 'a', sizeof(long_path) - 1);
                long_path[sizeof(long_path) - 1] = 0;
                assert_int_equal(client_connect(long_path, 1000, &c), -ENAMETOOLONG);
        }
}

/* corral logs as its own process, so that a hang or an endless file ends the command
 * and not the test: killed after 10 s, and its files cannot grow past 4 MiB (EFBIG).
 * Standard output goes to out_fd when given (a terminal), else to a file read back into
 * *ret_out; standard error into *ret_err. The exit status, or 128 + the signal. */
static size_t logs_out_size; /* of the last run_logs() output: NULs and all */

static int run_logs(const char *const *const_args, int out_fd, char **ret_out, char **ret_err) {
        char out_path[160], err_path[160];
        size_t size;
        int status;
        pid_t pid;

        snprintf(out_path, sizeof(out_path), "%s/logs-stdout", tmpdir);
        snprintf(err_path, sizeof(err_path), "%s/logs-stderr", tmpdir);
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct rlimit rl = { 4 << 20, 4 << 20 };
                int o = out_fd >= 0 ? out_fd : open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                char **args = strv_copy((char *const *) const_args);

                if (o < 0 || e < 0 || !args || dup2(o, STDOUT_FILENO) < 0 || dup2(e, STDERR_FILENO) < 0 ||
                    setrlimit(RLIMIT_FSIZE, &rl) < 0)
                        _exit(100);
                signal(SIGXFSZ, SIG_IGN);
                alarm(10);
                _exit(corral_run((int) strv_length(args), args));
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        *ret_out = mfree(*ret_out);
        *ret_err = mfree(*ret_err);
        logs_out_size = 0;
        if (out_fd < 0) {
                assert_int_equal(read_file_at(AT_FDCWD, out_path, 8 << 20, ret_out, &size), 0);
                logs_out_size = size;
        }
        assert_int_equal(read_file_at(AT_FDCWD, err_path, 1 << 20, ret_err, &size), 0);
        unlink(out_path);
        unlink(err_path);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void make_file(const char *path, const char *s) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, s, strlen(s)), 0);
}

/* A Logs reply naming PATH as the job's standard output (and standard error), the job
 * being UID's. */
static const char *logs_reply(const char *path, uid_t uid, gid_t gid, const char *lines) {
        static char buf[1024];

        snprintf(buf, sizeof(buf),
                 "{\"parameters\":{\"unit\":\"corral-job-7.scope\",\"workdir\":\"%s\",\"since\":1,"
                 "\"uid\":%u,\"gid\":%u%s%s%s%s%s}}",
                 tmpdir, (unsigned) uid, (unsigned) gid, path ? ",\"stdout_path\":\"" : "", path ?: "",
                 path ? "\"" : "", lines ? ",\"lines\":" : "", lines ?: "");
        return buf;
}

/* One Logs call answered with reply, then corral logs ARGS run against it. */
static int logs_against(const char *reply, const char *const *args, int out_fd, char **out, char **err) {
        Exchange ex[] = { { CORRAL_METHOD_LOGS, NULL, { reply } } };
        pid_t pid = start_server(ex, 1, false);
        int r = run_logs(args, out_fd, out, err);

        kill(pid, SIGKILL); /* it may wait for a second request that never comes */
        waitpid(pid, NULL, 0);
        return r;
}

/* A job's output path names something that is not a file: a FIFO hung corral logs
 * until a writer came (and then printed what it wrote), a link to /dev/zero never ended.
 * Both are refused at once, as is a directory; a regular file is printed. */
static void test_logs_special_files(void **state) {
        _cleanup_free_ char *out = NULL, *err = NULL;
        char fifo[160], zero[160], dir[160], file[160];

        snprintf(fifo, sizeof(fifo), "%s/fifo", tmpdir);
        snprintf(zero, sizeof(zero), "%s/zero", tmpdir);
        snprintf(dir, sizeof(dir), "%s/dir", tmpdir);
        snprintf(file, sizeof(file), "%s/file", tmpdir);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_int_equal(symlink("/dev/zero", zero), 0);
        assert_int_equal(mkdir(dir, 0700), 0);
        make_file(file, "hello\n");

        assert_int_equal(logs_against(logs_reply(fifo, getuid(), getgid(), NULL), ARGS("logs", "7"), -1, &out, &err), 1);
        assert_string_equal(out, "");
        assert_non_null(strstr(err, "not a regular file"));
        assert_int_equal(logs_against(logs_reply(zero, getuid(), getgid(), NULL), ARGS("logs", "7"), -1, &out, &err), 1);
        assert_int_equal(logs_out_size, 0);
        assert_non_null(strstr(err, "not a regular file"));
        assert_int_equal(logs_against(logs_reply(dir, getuid(), getgid(), NULL), ARGS("logs", "7"), -1, &out, &err), 1);
        assert_non_null(strstr(err, "not a regular file"));
        /* -n and -f read through tail, from what was opened here: the same refusals. */
        assert_int_equal(logs_against(logs_reply(fifo, getuid(), getgid(), NULL), ARGS("logs", "-n", "3", "7"), -1, &out, &err), 1);
        assert_non_null(strstr(err, "not a regular file"));
        assert_int_equal(logs_against(logs_reply(zero, getuid(), getgid(), NULL), ARGS("logs", "-f", "7"), -1, &out, &err), 1);
        assert_non_null(strstr(err, "not a regular file"));

        assert_int_equal(logs_against(logs_reply(file, getuid(), getgid(), NULL), ARGS("logs", "7"), -1, &out, &err), 0);
        assert_string_equal(out, "hello\n");
        assert_int_equal(logs_against(logs_reply(file, getuid(), getgid(), NULL), ARGS("logs", "-n", "1", "7"), -1, &out, &err), 0);
        assert_string_equal(out, "hello\n");
        unlink(fifo);
        unlink(zero);
        rmdir(dir);
        unlink(file);
}

/* What is printed is capped: the last --max-bytes of the file (16 MiB unless given),
 * said on standard error. */
static void test_logs_cap(void **state) {
        _cleanup_free_ char *out = NULL, *err = NULL;
        char file[160], text[3001];

        snprintf(file, sizeof(file), "%s/big", tmpdir);
        for (size_t i = 0; i < 3000; i++)
                text[i] = i % 100 == 99 ? '\n' : 'a' + (char) (i / 100 % 26);
        text[3000] = 0;
        make_file(file, text);
        assert_int_equal(logs_against(logs_reply(file, getuid(), getgid(), NULL), ARGS("logs", "--max-bytes", "1000", "7"), -1,
                                      &out, &err), 0);
        assert_string_equal(out, text + 2000);
        assert_non_null(strstr(err, "the last 1000 bytes"));
        assert_int_equal(logs_against(logs_reply(file, getuid(), getgid(), NULL), ARGS("logs", "7"), -1, &out, &err), 0);
        assert_string_equal(out, text);
        assert_int_equal(logs_against(logs_reply(file, getuid(), getgid(), NULL), ARGS("logs", "--max-bytes", "x", "7"), -1,
                                      &out, &err), 2);
        unlink(file);
}

/* Run as root on another user's job, corral logs opens its files as that user: a file
 * only root can read is refused, as is a symlink (the user's own reads follow theirs);
 * what the user can read is printed. */
static void test_logs_as_owner(void **state) {
        _cleanup_free_ char *out = NULL, *err = NULL;
        char secret[160], public[160], link[160];

        if (geteuid() != 0)
                skip();
        snprintf(secret, sizeof(secret), "%s/secret", tmpdir);
        snprintf(public, sizeof(public), "%s/public", tmpdir);
        snprintf(link, sizeof(link), "%s/link", tmpdir);
        assert_int_equal(chmod(tmpdir, 0711), 0);
        make_file(secret, "root's secret\n");
        assert_int_equal(chmod(secret, 0600), 0);
        make_file(public, "the job's output\n");
        assert_int_equal(chmod(public, 0644), 0);
        assert_int_equal(symlink(public, link), 0);

        assert_int_equal(logs_against(logs_reply(secret, 65534, 65534, NULL), ARGS("logs", "7"), -1, &out, &err), 1);
        assert_string_equal(out, "");
        assert_non_null(strstr(err, "Permission denied"));
        assert_int_equal(logs_against(logs_reply(secret, 65534, 65534, NULL), ARGS("logs", "-n", "5", "7"), -1, &out, &err), 1);
        assert_string_equal(out, "");
        assert_int_equal(logs_against(logs_reply(link, 65534, 65534, NULL), ARGS("logs", "7"), -1, &out, &err), 1);
        assert_string_equal(out, "");
        assert_non_null(strstr(err, "symbolic link"));
        assert_int_equal(logs_against(logs_reply(public, 65534, 65534, NULL), ARGS("logs", "7"), -1, &out, &err), 0);
        assert_string_equal(out, "the job's output\n");
        /* The job's owner's own reads (root's job here) follow the job's links. */
        assert_int_equal(logs_against(logs_reply(link, 0, 0, NULL), ARGS("logs", "7"), -1, &out, &err), 0);
        assert_string_equal(out, "the job's output\n");
        unlink(secret);
        unlink(public);
        unlink(link);
        assert_int_equal(chmod(tmpdir, 0700), 0);
}

/* A terminal as standard output: what the job wrote and the journal's lines reach it
 * escaped, as journalctl shows them; --raw passes the bytes. */
static void test_logs_escape_terminal(void **state) {
        _cleanup_free_ char *out = NULL, *err = NULL;
        _cleanup_close_ int master = -EBADF, slave = -EBADF;
        struct termios t;
        char file[160], buf[512];
        ssize_t n;

        snprintf(file, sizeof(file), "%s/esc", tmpdir);
        make_file(file, "a\tb\x1b]0;owned\x07\r\xc2\x9b" "c\xff\n");
        master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        assert_true(master >= 0);
        assert_int_equal(grantpt(master), 0);
        assert_int_equal(unlockpt(master), 0);
        slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
        assert_true(slave >= 0);
        assert_int_equal(tcgetattr(slave, &t), 0);
        cfmakeraw(&t);
        assert_int_equal(tcsetattr(slave, TCSANOW, &t), 0);

        assert_int_equal(logs_against(logs_reply(file, getuid(), getgid(), NULL), ARGS("logs", "7"), slave, &out, &err), 0);
        n = read(master, buf, sizeof(buf) - 1);
        assert_true(n > 0);
        buf[n] = 0;
        assert_string_equal(buf, "a\tb\\x1b]0;owned\\x07\\r\\u009bc\\xff\n");

        /* -n: tail's output comes through a pipe, escaped the same. */
        assert_int_equal(logs_against(logs_reply(file, getuid(), getgid(), NULL), ARGS("logs", "-n", "5", "7"), slave, &out,
                                      &err), 0);
        n = read(master, buf, sizeof(buf) - 1);
        assert_true(n > 0);
        buf[n] = 0;
        assert_string_equal(buf, "a\tb\\x1b]0;owned\\x07\\r\\u009bc\\xff\n");

        assert_int_equal(logs_against(logs_reply(NULL, getuid(), getgid(), "[\"x\\u001b[2Jy\",\"ok\"]"), ARGS("logs", "7"), slave,
                                      &out, &err), 0);
        n = read(master, buf, sizeof(buf) - 1);
        assert_true(n > 0);
        buf[n] = 0;
        assert_string_equal(buf, "x\\x1b[2Jy\nok\n");

        assert_int_equal(logs_against(logs_reply(file, getuid(), getgid(), NULL), ARGS("logs", "--raw", "7"), slave, &out, &err),
                         0);
        n = read(master, buf, sizeof(buf) - 1);
        assert_true(n > 0);
        buf[n] = 0;
        assert_string_equal(buf, "a\tb\x1b]0;owned\x07\r\xc2\x9b" "c\xff\n");

        /* Not a terminal: the bytes as they are. */
        assert_int_equal(logs_against(logs_reply(file, getuid(), getgid(), NULL), ARGS("logs", "7"), -1, &out, &err), 0);
        assert_string_equal(out, "a\tb\x1b]0;owned\x07\r\xc2\x9b" "c\xff\n");
        unlink(file);
}

/* logs_pump_new() as corral logs calls it (the linker's --wrap, cli/meson.build): it
 * fails while fail_pump is set. */
LogsPump *__real_logs_pump_new(int in_fd, int out_fd, bool escape, uint64_t limit);
LogsPump *__wrap_logs_pump_new(int in_fd, int out_fd, bool escape, uint64_t limit);
static bool fail_pump;

LogsPump *__wrap_logs_pump_new(int in_fd, int out_fd, bool escape, uint64_t limit) {
        if (fail_pump) {
                errno = ENOMEM;
                return NULL;
        }
        return __real_logs_pump_new(in_fd, out_fd, escape, limit);
}

/* This process's children (corral logs' orphans, this process being their subreaper, once
 * the fake server is reaped), killed and reaped; how many. */
static unsigned reap_orphans(void) {
        _cleanup_free_ char *list = NULL;
        char path[64];
        unsigned n = 0;

        snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int) getpid());
        assert_int_equal(read_file_at(AT_FDCWD, path, 1 << 16, &list, NULL), 0);
        for (char *p = list, *end; *p; p = end) {
                long pid = strtol(p, &end, 10);

                if (end == p)
                        break;
                (void) kill((pid_t) pid, SIGKILL);
                assert_int_equal(waitpid((pid_t) pid, NULL, 0), (pid_t) pid);
                n++;
        }
        return n;
}

/* The pump that escapes tail's output for a terminal cannot be allocated: corral logs
 * fails and leaves no tail behind (it used to start tail -f first, then neither kill nor
 * reap it, nor close its pipe). */
static void test_logs_pump_fails(void **state) {
        _cleanup_free_ char *out = NULL, *err = NULL;
        _cleanup_close_ int master = -EBADF, slave = -EBADF;
        char file[160];
        unsigned left;
        int r;

        snprintf(file, sizeof(file), "%s/empty", tmpdir);
        make_file(file, "");
        master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        assert_true(master >= 0);
        assert_int_equal(grantpt(master), 0);
        assert_int_equal(unlockpt(master), 0);
        slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
        assert_true(slave >= 0);
        assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
        fail_pump = true;
        r = logs_against(logs_reply(file, getuid(), getgid(), NULL), ARGS("logs", "-f", "7"), slave, &out, &err);
        fail_pump = false;
        left = reap_orphans();
        assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
        unlink(file);
        assert_int_equal(r, 1);
        assert_int_equal(left, 0);
}


/* corral usage: GPU-hours used and efficiency beside GPU-hours held, "-" in the table and
 * empty in the CSV where no GPU was read (null in the reply), never 0. */
static void test_usage_gpu_columns(void **state) {
        static const Exchange ex[] = {
                { CORRAL_METHOD_USAGE, NULL,
                  { "{\"parameters\":{\"by\":\"user\",\"until\":\"2024-06-02\",\"all\":true,\"rows\":["
                    "{\"key\":\"alice\",\"jobs\":2,\"core_hours\":2.0,\"gpu_hours\":2.0,\"gpu_hours_used\":0.75,"
                    "\"gpu_hours_sampled\":2.0,\"gpu_efficiency\":0.375,\"service_units\":2.0,\"cpu_hours\":1.0,"
                    "\"efficiency\":0.5},"
                    "{\"key\":\"bob\",\"jobs\":1,\"core_hours\":1.0,\"gpu_hours\":1.0,\"gpu_hours_used\":null,"
                    "\"gpu_hours_sampled\":null,\"gpu_efficiency\":null,\"service_units\":1.0,\"cpu_hours\":1.0,"
                    "\"efficiency\":1.0}],"
                    "\"total\":{\"jobs\":3,\"core_hours\":3.0,\"gpu_hours\":3.0,\"gpu_hours_used\":0.75,"
                    "\"gpu_hours_sampled\":2.0,\"gpu_efficiency\":0.375}}}" } },
        };
        _cleanup_free_ char *out = NULL;
        pid_t pid;

        pid = start_server(ex, ELEMENTSOF(ex), false);
        assert_int_equal(run(ARGS("usage", "--by", "user", "-S", "all", "-E", "2024-06-02"), &out), 0);
        assert_int_equal(server_status(pid), 0);
        if (!strstr(out, "GPU-H  GPU-USED  GPU-EFF") || !strstr(out, "2.00      0.75    37.5%") ||
            !strstr(out, "1.00         -        -"))
                fail_msg("table:\n%s", out);

        pid = start_server(ex, ELEMENTSOF(ex), false);
        assert_int_equal(run(ARGS("usage", "--by", "user", "-S", "all", "-E", "2024-06-02", "--csv"), &out), 0);
        assert_int_equal(server_status(pid), 0);
        if (!strstr(out, ",gpu_hours,gpu_hours_used,gpu_efficiency\n") ||
            !strstr(out, ",2.000000,0.750000,0.3750\n") || !strstr(out, ",1.000000,,\n"))
                fail_msg("csv:\n%s", out);
}

/* corral usage --job: Show's job as seff prints it; someone else's job, whose usage Show
 * leaves out, is refused rather than printed as 0 %. */
static void test_usage_job(void **state) {
        static const Exchange ex[] = {
                { CORRAL_METHOD_SHOW, NULL,
                  { "{\"parameters\":{\"job\":{\"id\":42,\"user\":\"alice\",\"uid\":65534,\"state\":\"COMPLETED\","
                    "\"cpus\":2,\"memory\":1073741824,\"start_time\":1000,\"end_time\":4600,\"exit_code\":3,"
                    "\"workdir\":\"/tmp\",\"usage\":{\"cpu_usec\":5400000000,\"memory_peak\":268435456},"
                    "\"gpu_usage\":[{\"gpu\":1,\"samples\":5,\"util_mean\":20,\"util_max\":50,"
                    "\"memory_max\":1048576,\"held_sec\":3600,\"running\":false}]}}}" } },
        };
        static const Exchange other[] = {
                { CORRAL_METHOD_SHOW, NULL,
                  { "{\"parameters\":{\"job\":{\"id\":43,\"user\":\"bob\",\"state\":\"COMPLETED\",\"cpus\":1}}}" } },
        };
        _cleanup_free_ char *out = NULL;
        pid_t pid;

        pid = start_server(ex, ELEMENTSOF(ex), false);
        assert_int_equal(run(ARGS("usage", "--job", "42"), &out), 0);
        assert_int_equal(server_status(pid), 0);
        if (!strstr(out, "Job ID: 42\n") || !strstr(out, "State: COMPLETED (exit code 3)\n") ||
            !strstr(out, "CPU Efficiency: 75.00% of 02:00:00 core-walltime\n") ||
            !strstr(out, "Memory Efficiency: 25.00% of 1.00 GB\n") || !strstr(out, "GPUs: 1\n") ||
            !strstr(out, "GPU Efficiency: 20.00% of 01:00:00 GPU-walltime\n"))
                fail_msg("usage --job:\n%s", out);

        pid = start_server(other, ELEMENTSOF(other), false);
        assert_int_equal(run(ARGS("usage", "--job", "43"), &out), 1);
        assert_int_equal(server_status(pid), 0);
        assert_string_equal(out, "");

        /* Nothing is asked with options that do not go with --job. */
        assert_int_equal(run(ARGS("usage", "--job", "42", "--csv"), &out), 2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_submit),
                cmocka_unit_test(test_sbatch),
                cmocka_unit_test(test_submit_array_parsable),
                cmocka_unit_test(test_submit_script),
                cmocka_unit_test(test_submit_bad_directive),
                cmocka_unit_test(test_submit_test_only),
                cmocka_unit_test(test_cancel_errors),
                cmocka_unit_test(test_invalid_parameter_is_usage),
                cmocka_unit_test(test_wait_stream),
                cmocka_unit_test(test_wait_pipelined),
                cmocka_unit_test(test_queue_roundtrip),
                cmocka_unit_test(test_queue_limit_after),
                cmocka_unit_test(test_show_history),
                cmocka_unit_test(test_stored_control_characters_escaped),
                cmocka_unit_test(test_reply_warning),
                cmocka_unit_test(test_unreachable),
                cmocka_unit_test(test_hangup_and_timeout),
                cmocka_unit_test(test_logs_special_files),
                cmocka_unit_test(test_logs_cap),
                cmocka_unit_test(test_logs_pump_fails),
                cmocka_unit_test(test_logs_as_owner),
                cmocka_unit_test(test_logs_escape_terminal),
                cmocka_unit_test(test_usage_gpu_columns),
                cmocka_unit_test(test_usage_job),
        };

        /* A child that exits while we write must not kill the test with SIGPIPE. */
        signal(SIGPIPE, SIG_IGN);
        return cmocka_run_group_tests(tests, setup, teardown);
}
