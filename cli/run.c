/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral run (and corral submit -I, srun --pty, salloc): a job queued like any other that
 * runs, once started, on the caller's terminal.
 *
 * As ssh -t does it: the job does not get the caller's own terminal, which is the
 * controlling terminal of the caller's login session and can be no other session's, but
 * a fresh pseudo-terminal opened here, as the caller (so devpts makes it theirs), with
 * the caller's terminal settings and window size. Its slave goes to corrald with the Run
 * request (SCM_RIGHTS); corrald checks it is the caller's and the job's supervisor makes
 * it the job's controlling terminal with the job in its foreground. Here the caller's
 * terminal is put in raw mode and relayed to and from the master, so Ctrl-C, Ctrl-Z and
 * Ctrl-\ are characters the job's terminal turns into signals for the job, and a window
 * size change (SIGWINCH here) is set on the master, which signals the job's foreground.
 * Without a terminal (a Jupyter server under nohup, a pipe) the caller's own stdin,
 * stdout and stderr are passed as they are.
 *
 * While the job waits, one line on stderr says why and when it is expected to start (as
 * corral why has it), refreshed; Ctrl-C then withdraws it. The exit status is the
 * command's, or 128 + the signal that killed it. If corral goes away (hangup, killed),
 * corrald cancels the job InteractiveHangupSec= later. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "fd-util.h"
#include "log.h"
#include "run.h"
#include "run-options.h"
#include "strv.h"
#include "text-util.h"

extern char **environ;

/* The waiting line: first after a second (a job that starts at once says nothing), then
 * refreshed every few seconds. */
#define STATUS_FIRST_MS 1000
#define STATUS_REFRESH_MS 5000
#define RELAY_CHUNK 16384

typedef struct Run {
        Cli *cli;
        const char *who;        /* after the program's name in every message: "run: " for corral, "" */
        bool quiet;
        Client *client;         /* the Run call's stream */
        Cli side;               /* Why and Cancel, on a connection of their own */
        uint64_t job_id;
        bool running;
        int master;             /* the pseudo-terminal's master; -EBADF without a terminal */
        int tty_in, tty_out;    /* the caller's terminal, relayed to and from master; -1: not one */
        int tty_any;            /* a descriptor of the caller's terminal, for its size */
        bool raw;
        struct termios saved;
        /* Typed input not yet taken by the job's terminal: the master is non-blocking, so
         * a job that reads nothing never stops its output from being relayed. */
        char in[RELAY_CHUNK];
        size_t in_len, in_off;
        bool status_shown;
        bool status_asked;      /* the waiting line was computed at least once */
        char *last_status;
} Run;

static int sig_pipe[2] = { -EBADF, -EBADF };

static void on_signal(int sig) {
        unsigned char c = (unsigned char) sig;
        int saved = errno;

        (void) write(sig_pipe[1], &c, 1);
        errno = saved;
}

static void run_restore_terminal(Run *r) {
        if (r->raw) {
                (void) tcsetattr(r->tty_in, TCSADRAIN, &r->saved);
                r->raw = false;
        }
}

static void run_clear_status(Run *r) {
        if (r->status_shown && isatty(STDERR_FILENO))
                fputs("\r\033[K", stderr);
        r->status_shown = false;
}

static void run_done(Run *r) {
        run_clear_status(r);
        run_restore_terminal(r);
        r->client = client_free(r->client);
        cli_done(&r->side);
        r->master = safe_close(r->master);
        free(r->last_status);
        for (int i = 0; i < 2; i++)
                sig_pipe[i] = safe_close(sig_pipe[i]);
}

static void run_sync_winsize(Run *r) {
        struct winsize ws;

        if (r->master >= 0 && r->tty_any >= 0 && ioctl(r->tty_any, TIOCGWINSZ, &ws) >= 0)
                (void) ioctl(r->master, TIOCSWINSZ, &ws);
}

/* The pseudo-terminal, with the caller's settings and size; *ret_slave is passed to
 * corrald. */
static int run_open_pty(Run *r, int *ret_slave) {
        _cleanup_close_ int master = -EBADF, slave = -EBADF;
        struct termios t;
        const char *name;

        master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 || !(name = ptsname(master)))
                return -errno;
        slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (slave < 0)
                return -errno;
        if (tcgetattr(r->tty_any, &t) >= 0)
                (void) tcsetattr(slave, TCSANOW, &t);
        if (fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK) < 0)
                return -errno;
        r->master = TAKE_FD(master);
        run_sync_winsize(r);
        *ret_slave = TAKE_FD(slave);
        return 0;
}

static int run_raw(Run *r) {
        struct termios t;

        if (r->tty_in < 0 || tcgetattr(r->tty_in, &r->saved) < 0)
                return 0;
        t = r->saved;
        cfmakeraw(&t);
        if (tcsetattr(r->tty_in, TCSADRAIN, &t) < 0)
                return -errno;
        r->raw = true;
        return 0;
}

static void run_show_status(Run *r) {
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_free_ char *line = NULL;
        const char *reason = NULL;
        json_object *v;
        char when[64] = "no estimate yet";

        if (r->quiet || r->running || !r->job_id)
                return;
        r->status_asked = true;
        if (cli_call(&r->side, CORRAL_METHOD_WHY, json_job_id(r->job_id), &reply) < 0 || reply.error)
                return;
        if (json_object_object_get_ex(reply.parameters, "reason", &v) && json_object_is_type(v, json_type_string))
                reason = json_object_get_string(v);
        if (json_object_object_get_ex(reply.parameters, "est_start", &v) && json_object_is_type(v, json_type_int)) {
                time_t t = (time_t) json_object_get_int64(v);
                struct tm tm;
                if (t <= time(NULL))
                        snprintf(when, sizeof when, "expected to start now");
                else if (localtime_r(&t, &tm))
                        strftime(when, sizeof when, "expected to start at %Y-%m-%d %H:%M:%S", &tm);
        }
        if (asprintf(&line, "%s: %sjob %" PRIu64 " is waiting (%s), %s; Ctrl-C withdraws it", program_invocation_short_name, r->who, r->job_id,
                     reason ?: "queued", when) < 0)
                return;
        if (isatty(STDERR_FILENO)) {
                /* One line, rewritten in place. */
                fputs("\r\033[K", stderr);
                fprintf_escaped(stderr, "%s", line);
                fflush(stderr);
                r->status_shown = true;
        } else if (!streq_ptr(line, r->last_status)) {
                fprintf_escaped(stderr, "%s", line);
                fputc('\n', stderr);
        }
        free(r->last_status);
        r->last_status = TAKE_PTR(line);
}

static void run_cancel(Run *r) {
        _cleanup_(reply_done) Reply reply = {};

        if (r->job_id)
                (void) cli_call(&r->side, CORRAL_METHOD_CANCEL, json_job_id(r->job_id), &reply);
}

/* What came from the job's terminal, to the caller's. */
static bool run_relay_out(Run *r) {
        char buf[RELAY_CHUNK];
        ssize_t n = read(r->master, buf, sizeof buf);

        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return true;
        if (n <= 0)
                return false; /* EIO: no process holds the slave any more */
        if (r->tty_out >= 0)
                (void) loop_write(r->tty_out, buf, (size_t) n);
        return true;
}

/* What was typed, to the job's terminal, as far as it takes it now. */
static void run_flush_in(Run *r) {
        while (r->in_off < r->in_len) {
                ssize_t n = write(r->master, r->in + r->in_off, r->in_len - r->in_off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        r->in_off = r->in_len; /* the job's terminal is gone: nobody reads */
                        break;
                }
                r->in_off += (size_t) n;
        }
        r->in_len = r->in_off = 0;
}

static bool run_relay_in(Run *r) {
        ssize_t n = read(r->tty_in, r->in, sizeof r->in);

        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return true;
        if (n <= 0)
                return false; /* our terminal hung up */
        r->in_len = (size_t) n;
        r->in_off = 0;
        run_flush_in(r);
        return true;
}

/* The job's output still in the terminal once it has ended. */
static void run_drain(Run *r) {
        if (r->master < 0)
                return;
        for (int i = 0; i < 1024 && run_relay_out(r); i++) {
                struct pollfd p = { .fd = r->master, .events = POLLIN };
                if (poll(&p, 1, 50) <= 0)
                        break;
        }
}

/* One reply of the stream: 1 when it was the last (*ret_status is then the exit status), 0 to
 * go on. */
static int run_handle_reply(Run *r, Reply *reply, int *ret_status) {
        _cleanup_(job_info_done) JobInfo info = JOB_INFO_INIT;
        json_object *v;
        char buf[1536];

        if (reply->error) {
                run_clear_status(r);
                run_restore_terminal(r);
                *ret_status = cli_report_error(r->cli, NULL, reply);
                return 1;
        }
        if (!r->job_id && json_object_object_get_ex(reply->parameters, "job_id", &v)) {
                uint64_t id;
                if (json_get_u64(v, 1, CORRAL_JOB_ID_MAX, &id) >= 0)
                        r->job_id = id;
                return 0;
        }
        if (!json_object_object_get_ex(reply->parameters, "job", &v) || job_info_from_json(v, &info, NULL) < 0)
                return 0;
        if (job_state_name_is_final(info.state)) {
                run_drain(r);
                run_clear_status(r);
                run_restore_terminal(r);
                /* The command's own end says enough; anything else is said. */
                if (!streq_ptr(info.state, "COMPLETED") &&
                    !(streq_ptr(info.state, "FAILED") && (info.exit_code >= 0 || info.exit_signal > 0) &&
                      !streq_ptr(info.reason, "LaunchFailed")))
                        log_error("%sjob %" PRIu64 ": %s", r->who, r->job_id, format_job_outcome(buf, sizeof buf, &info));
                *ret_status = job_exit_status(&info);
                return 1;
        }
        if (!r->running && streq_ptr(info.state, "RUNNING")) {
                r->running = true;
                run_clear_status(r);
                if (run_raw(r) < 0)
                        log_warning("%scannot put the terminal in raw mode: %m", r->who);
                run_sync_winsize(r);
        }
        return 0;
}

static int run_loop(Run *r) {
        bool master_open = r->master >= 0, tty_in_open = r->tty_in >= 0;
        int status = CLI_EXIT_FAILURE;

        for (;;) {
                struct pollfd p[4] = {
                        { .fd = client_fd(r->client), .events = POLLIN },
                        { .fd = sig_pipe[0], .events = POLLIN },
                        { .fd = r->running && master_open ? r->master : -1,
                          .events = POLLIN | (r->in_len > 0 ? POLLOUT : 0) },
                        { .fd = r->running && tty_in_open && r->in_len == 0 ? r->tty_in : -1, .events = POLLIN },
                };
                int k = poll(p, 4, r->running || r->quiet || !r->job_id ? -1
                                   : r->status_asked                 ? STATUS_REFRESH_MS
                                                                     : STATUS_FIRST_MS);

                if (k < 0 && errno != EINTR)
                        return log_error_errno(errno, "%spoll: %m", r->who), CLI_EXIT_FAILURE;
                if (k == 0) {
                        run_show_status(r);
                        continue;
                }
                if (p[1].revents) {
                        unsigned char sig;
                        while (read(sig_pipe[0], &sig, 1) == 1) {
                                if (sig == SIGWINCH) {
                                        run_sync_winsize(r);
                                        continue;
                                }
                                if (!r->running) {
                                        /* Waiting: withdrawn. */
                                        run_clear_status(r);
                                        run_cancel(r);
                                        if (r->job_id)
                                                log_info("%sjob %" PRIu64 " withdrawn.", r->who, r->job_id);
                                        return 128 + sig;
                                }
                                if (sig == SIGINT) {
                                        /* Only without a terminal (with one, Ctrl-C is a
                                         * character for the job's): as srun, cancel. */
                                        run_cancel(r);
                                        continue;
                                }
                                /* Hangup or termination: corrald ends the job after its
                                 * grace period (InteractiveHangupSec=). */
                                run_restore_terminal(r);
                                return 128 + sig;
                        }
                }
                if ((p[2].revents & POLLOUT) && r->in_len > 0)
                        run_flush_in(r);
                if ((p[2].revents & ~POLLOUT) && !run_relay_out(r)) {
                        master_open = false;
                        r->in_len = r->in_off = 0;
                }
                if (p[3].revents && !run_relay_in(r)) {
                        run_restore_terminal(r);
                        return 128 + SIGHUP;
                }
                if (p[0].revents) {
                        for (;;) {
                                _cleanup_(reply_done) Reply reply = {};
                                int q = client_receive(r->client, 0, &reply);

                                if (q == -ETIMEDOUT)
                                        break;
                                if (q < 0) {
                                        run_clear_status(r);
                                        run_restore_terminal(r);
                                        if (r->running)
                                                log_error_errno(q, "%slost the connection to corrald (%m): job %" PRIu64
                                                                " is cancelled InteractiveHangupSec= from now",
                                                                r->who, r->job_id);
                                        else
                                                log_error_errno(q, "%slost the connection to corrald: %m", r->who);
                                        return cli_exit_status_from_errno(q);
                                }
                                if (run_handle_reply(r, &reply, &status) > 0)
                                        return status;
                        }
                }
        }
}

int run_interactive(Cli *cli, SubmitOptions *o, char *const *command, const char *who, bool quiet) {
        _cleanup_(run_done) Run r = { .cli = cli, .who = who, .quiet = quiet, .master = -EBADF, .tty_in = -1,
                                      .tty_out = -1, .tty_any = -1,
                                      .side = { .verb = cli->verb, .timeout_ms = cli->timeout_ms,
                                                .socket_path = cli->socket_path } };
        _cleanup_json_ json_object *params = NULL;
        _cleanup_free_ char *error = NULL, *cwd = NULL;
        _cleanup_close_ int slave = -EBADF;
        int fds[3] = { STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO };
        struct sigaction sa = { .sa_handler = on_signal };
        const char *base;
        mode_t mask;
        int k;

        if (!command || !command[0]) {
                log_error("%sno command given", who);
                return CLI_EXIT_USAGE;
        }
        k = run_options_check(o, &error);
        if (k == -ENOMEM)
                return cli_oom();
        if (k < 0) {
                log_error("%s%s", who, error);
                return CLI_EXIT_USAGE;
        }
        o->req.interactive = true;
        o->req.argv = strv_copy(command);
        if (!o->req.argv)
                return cli_oom();
        base = strrchr(command[0], '/') ? strrchr(command[0], '/') + 1 : command[0];
        if (!o->req.name && job_name_is_valid(base) && !(o->req.name = strdup(base)))
                return cli_oom();
        mask = umask(0);
        (void) umask(mask);
        o->req.umask = mask & CORRAL_UMASK_MAX;
        cwd = getcwd(NULL, 0);
        error = mfree(error);
        k = submit_options_finalize(o, cwd, environ, &error);
        if (k == -ENOMEM)
                return cli_oom();
        if (k < 0) {
                log_error("%s%s", who, strna(error));
                return CLI_EXIT_USAGE;
        }

        /* A terminal on any of the three: the job gets a pseudo-terminal of its own in
         * their place; what is not a terminal (a pipe, a file) is passed as it is. */
        for (int i = 0; i < 3; i++)
                if (isatty(i) && r.tty_any < 0)
                        r.tty_any = i;
        if (r.tty_any >= 0) {
                k = run_open_pty(&r, &slave);
                if (k < 0)
                        return log_error_errno(k, "%scannot open a pseudo-terminal: %m", who), CLI_EXIT_FAILURE;
                for (int i = 0; i < 3; i++)
                        if (isatty(i))
                                fds[i] = slave;
                r.tty_in = isatty(STDIN_FILENO) ? STDIN_FILENO : -1;
                r.tty_out = isatty(STDOUT_FILENO) ? STDOUT_FILENO : isatty(STDERR_FILENO) ? STDERR_FILENO : -1;
        }

        if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                return log_error_errno(errno, "%spipe: %m", who), CLI_EXIT_FAILURE;
        sigemptyset(&sa.sa_mask);
        for (int s = 0, sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH }; s < 5; s++)
                (void) sigaction(sigs[s], &sa, NULL);

        k = client_connect(cli->socket_path ?: client_socket_path(), cli->timeout_ms, &r.client);
        if (k < 0) {
                log_error_errno(k, "%scannot reach corrald at %s: %m", who, cli->socket_path ?: client_socket_path());
                return cli_exit_status_from_errno(k);
        }
        k = submit_request_to_json(&o->req, &params);
        if (k < 0)
                return cli_oom();
        k = client_send_fds(r.client, CORRAL_METHOD_RUN, TAKE_PTR(params), true, fds, 3, cli->timeout_ms);
        if (k < 0) {
                log_error_errno(k, "%scannot send the job to corrald: %m", who);
                return cli_exit_status_from_errno(k);
        }
        /* corrald holds it now; ours would keep the terminal open after the job. */
        slave = safe_close(slave);
        return run_loop(&r);
}

static void run_help(void) {
        printf("Usage: corral run [OPTIONS] [--] COMMAND [ARGS...]\n"
               "       corral submit -I [OPTIONS] [--] COMMAND [ARGS...]\n\n"
               "Queue COMMAND as an interactive job and run it, once started, on this terminal\n"
               "(or on these pipes), in its own scope with its CPUs, memory and devices. While it\n"
               "waits a line on stderr says why; Ctrl-C withdraws it. The exit status is the\n"
               "command's. Takes corral submit's options (see corral submit --help), and:\n"
               "  -Q, --quiet                  no waiting line\n"
               "  -h, --help                   show this help\n");
}

int verb_run(Cli *cli, int argc, char **argv) {
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_free_ char **args = NULL;
        _cleanup_free_ char *error = NULL;
        RunFlags flags = {};
        int n, first, r;

        submit_options_init(&o, time(NULL));
        r = run_split_flags(argc, argv, &n, &args, &flags);
        if (r < 0)
                return cli_oom();
        if (flags.help) {
                run_help();
                return CLI_EXIT_SUCCESS;
        }
        r = submit_options_parse_argv(n, args, &o, &first, &error);
        if (r == -ENOMEM)
                return cli_oom();
        if (r < 0) {
                log_error("run: %s (see corral run --help)", strna(error));
                return CLI_EXIT_USAGE;
        }
        STRV_FOREACH(w, o.warnings)
                log_warning("run: warning: %s", *w);
        if (first >= n) {
                log_error("run: no command given (corral run [OPTIONS] [--] COMMAND [ARGS...])");
                return CLI_EXIT_USAGE;
        }
        return run_interactive(cli, &o, args + first, "run: ", flags.quiet);
}
