/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The supervisor's fork server, corrald's side. Every job had its supervisor spawned and
 * exec'ed: the exec, the dynamic linker's work for its libraries and their constructors,
 * about a tenth of a trivial job's CPU in the test guest. One supervisor started once
 * (corral-supervisor --server-fd 3, in corrald's cgroup) forks each job's instead; the
 * child goes on exactly as an exec'ed supervisor would, from its arguments on. A request
 * carries the job and its sync pipe; the answer, the child's pid and a pidfd, through
 * which corrald learns of its death (the server reaps it). Where the server cannot be
 * started or has gone, launch.c spawns the supervisor itself, as before. */

#include <errno.h>
#include <spawn.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errno-util.h"
#include "executor-internal.h"
#include "fd-util.h"
#include "fork-server.h"
#include "log.h"

static void fork_server_drop(Executor *e) {
        e->fork_io = sd_event_source_disable_unref(e->fork_io);
        e->fork_fd = safe_close(e->fork_fd);
        /* Its exit is still reaped: the child source floats until then. */
        if (e->fork_child) {
                (void) sd_event_source_set_userdata(e->fork_child, NULL);
                (void) sd_event_source_set_floating(e->fork_child, true);
                e->fork_child = sd_event_source_unref(e->fork_child);
        }
}

static void fork_server_lost(Executor *e) {
        log_debug("The supervisor's fork server has gone; supervisors are spawned one by one.");
        fork_server_drop(e);
        executor_fork_server_lost(e);
}

static int on_fork_server_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        Executor *e = userdata;

        if (!e) {
                (void) sd_event_source_set_floating(s, false);
                return 0;
        }
        e->fork_child = sd_event_source_disable_unref(e->fork_child);
        /* It ends only when its socket does: gone while we hold it, it would go again. */
        e->fork_failed = true;
        fork_server_lost(e);
        return 0;
}

static int on_fork_reply(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Executor *e = userdata;

        for (;;) {
                ForkReply reply;
                int pidfd, r;

                r = record_recv(fd, &reply, sizeof reply, &pidfd, MSG_DONTWAIT);
                if (r == -EAGAIN || r == -EINTR)
                        return 0;
                if (r < 0) {
                        fork_server_lost(e);
                        return 0;
                }
                executor_forked(e, reply.job_id, reply.pid, pidfd, reply.error);
        }
}

static int fork_server_start(Executor *e) {
        _cleanup_free_ char *result_dir = NULL, *spec_dir = NULL;
        posix_spawn_file_actions_t fa;
        int pair[2], r;
        pid_t pid;

        if (asprintf(&result_dir, "%s/results", e->run_dir) < 0 || asprintf(&spec_dir, "%s/jobs", e->run_dir) < 0)
                return -ENOMEM;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
                return negative_errno();
        char *argv[] = { e->supervisor_path, (char *) "--server-fd", (char *) "3", (char *) "--result-dir",
                         result_dir, (char *) "--spec-dir", spec_dir, NULL };
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, pair[1], 3);
        r = posix_spawn(&pid, e->supervisor_path, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        safe_close(pair[1]);
        if (r != 0) {
                safe_close(pair[0]);
                return -r;
        }
        e->fork_fd = pair[0];
        r = sd_event_add_child(e->event, &e->fork_child, pid, WEXITED, on_fork_server_exit, e);
        if (r < 0) {
                (void) kill(pid, SIGKILL);
                e->fork_fd = safe_close(e->fork_fd);
                return r;
        }
        r = sd_event_add_io(e->event, &e->fork_io, e->fork_fd, EPOLLIN, on_fork_reply, e);
        if (r < 0) {
                (void) kill(pid, SIGKILL);
                fork_server_drop(e);
                return r;
        }
        log_debug("The supervisor's fork server is process %d.", (int) pid);
        return 0;
}

int executor_fork_request(Executor *e, uint64_t job_id, int sync_fd) {
        ForkRequest req = { .job_id = job_id, .kill_wait_usec = e->config.kill_wait_sec * 1000000 };
        int r;

        if (e->fork_fd < 0) {
                if (e->fork_failed)
                        return -ENOTCONN;
                r = fork_server_start(e);
                if (r < 0) {
                        /* Not again: one failure to start says it will not (a supervisor
                         * too old for --server-fd exits at once, and is seen to go). */
                        e->fork_failed = true;
                        return r;
                }
        }
        /* A few dozen bytes into a socket nobody else writes: it does not fill, and if it
         * ever did, the launch goes the other way rather than wait. */
        r = record_send(e->fork_fd, &req, sizeof req, sync_fd, MSG_DONTWAIT);
        if (r < 0 && r != -EAGAIN)
                fork_server_lost(e);
        return r;
}

void executor_fork_server_stop(Executor *e) {
        fork_server_drop(e); /* EOF on its socket ends it */
}
