/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A short command run for corrald by systemd, as a given user, in a transient service of
 * its own (as job mail is, mail.c), its standard output and error read back over pipes on
 * the event loop: the Slurm client's commands a forwarding queue runs (corrald(8),
 * FORWARDING TO SLURM). corrald never forks and never waits: the reply comes when systemd
 * has answered the start and both pipes have reached their end, whichever comes last. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "executor-internal.h"
#include "executor.h"
#include "fd-util.h"
#include "log.h"
#include "properties.h"
#include "strv.h"

typedef struct Stream {
        int fd;
        sd_event_source *source;
        char *buf;
        size_t n;
        bool eof;
} Stream;

typedef struct RunCommand {
        Stream out, err;
        bool replied;
        int error;              /* the start's, from systemd */
        char *bus_error;
        size_t max_output;
        ExecutorCommandDone done;
        void *userdata;
} RunCommand;

static void run_command_free(RunCommand *c) {
        for (Stream *s = &c->out; s <= &c->err; s++) {
                sd_event_source_disable_unref(s->source);
                safe_close(s->fd);
                free(s->buf);
        }
        free(c->bus_error);
        free(c);
}

static void maybe_done(RunCommand *c) {
        if (!c->replied || !c->out.eof || !c->err.eof)
                return;
        c->done(c->error, c->out.buf ?: "", c->bus_error ?: (c->err.buf ?: ""), c->userdata);
        run_command_free(c);
}

static int on_stream(RunCommand *c, Stream *s, int fd) {
        char buf[65536];
        ssize_t l = read(fd, buf, sizeof buf);

        if (l < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (l > 0 && s->n + (size_t) l <= c->max_output) {
                char *p = realloc(s->buf, s->n + (size_t) l + 1);
                if (p) {
                        memcpy(p + s->n, buf, (size_t) l);
                        s->n += (size_t) l;
                        p[s->n] = 0;
                        s->buf = p;
                        return 0;
                }
        }
        if (l > 0) {
                /* More than the bound: the output is not read whole, so not at all. */
                if (c->error == 0)
                        c->error = -EFBIG;
                return 0;
        }
        s->eof = true;
        s->source = sd_event_source_disable_unref(s->source);
        s->fd = safe_close(s->fd);
        maybe_done(c);
        return 0;
}

static int on_out(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        RunCommand *c = userdata;
        return on_stream(c, &c->out, fd);
}

static int on_err(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        RunCommand *c = userdata;
        return on_stream(c, &c->err, fd);
}

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        RunCommand *c = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        c->replied = true;
        if (e) {
                c->error = -EIO;
                c->bus_error = strdup(e->message ?: e->name);
        }
        maybe_done(c);
        return 0;
}

int executor_run_command(Executor *e, const ExecutorCommand *cmd, ExecutorCommandDone done, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int out[2] = { -EBADF, -EBADF }, err[2] = { -EBADF, -EBADF };
        char unit[128], user[16];
        RunCommand *c;
        int r;

        assert(e);
        assert(cmd && cmd->argv && cmd->argv[0] && cmd->argv[0][0] == '/');
        assert(done);

        c = new0(RunCommand, 1);
        if (!c)
                return -ENOMEM;
        c->out.fd = c->err.fd = -EBADF;
        c->max_output = cmd->max_output ?: UINT64_C(16) << 20;
        c->done = done;
        c->userdata = userdata;
        if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
                r = -errno;
                goto fail;
        }
        c->out.fd = out[0], c->err.fd = err[0];
        (void) fcntl(out[0], F_SETFL, O_NONBLOCK);
        (void) fcntl(err[0], F_SETFL, O_NONBLOCK);

        /* Unique across daemon runs, so a command the last run left does not block it. */
        snprintf(unit, sizeof unit, "%s-%" PRIu64 "-%" PRIu64 ".service", cmd->unit_prefix,
                 (uint64_t) time(NULL), ++e->command_seq);
        snprintf(user, sizeof user, "%u", (unsigned) cmd->uid);
        r = exec_transient_unit_begin(e->bus, unit, &m);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)(sv)", "Description", "s", cmd->description ?: unit,
                                          "User", "s", user, "Type", "s", "exec", "CollectMode", "s",
                                          "inactive-or-failed", "RuntimeMaxUSec", "t",
                                          (cmd->timeout_sec ?: 120) * UINT64_C(1000000), "Slice", "s",
                                          EXECUTOR_MAIL_SLICE, "UMask", "u", (uint32_t) cmd->umask);
        /* The systemd-made variables are no part of the job's environment. */
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "UnsetEnvironment", "as", 2, "INVOCATION_ID", "SYSTEMD_EXEC_PID");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", "Environment");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "as");
        if (r >= 0)
                r = sd_bus_message_append_strv(m, cmd->env ?: (char *[]) { NULL });
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)(sv)", "StandardOutputFileDescriptor", "h", out[1],
                                          "StandardErrorFileDescriptor", "h", err[1]);
        if (r >= 0 && cmd->stdin_data)
                r = exec_property_append_bytes(m, "StandardInputData", cmd->stdin_data, strlen(cmd->stdin_data));
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", "ExecStart");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "a(sasb)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sasb)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'r', "sasb");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", cmd->argv[0]);
        if (r >= 0)
                r = sd_bus_message_append_strv(m, cmd->argv);
        if (r >= 0)
                r = sd_bus_message_append(m, "b", false);
        for (int k = 0; r >= 0 && k < 4; k++)
                r = sd_bus_message_close_container(m);
        /* The message holds its own copies of the write ends. */
        out[1] = safe_close(out[1]);
        err[1] = safe_close(err[1]);
        if (r >= 0)
                r = sd_event_add_io(e->event, &c->out.source, c->out.fd, EPOLLIN, on_out, c);
        if (r >= 0)
                r = sd_event_add_io(e->event, &c->err.source, c->err.fd, EPOLLIN, on_err, c);
        if (r >= 0)
                r = exec_transient_unit_send(e->bus, m, NULL, on_reply, c);
        if (r < 0)
                goto fail;
        return 0;
fail:
        safe_close(out[1]);
        safe_close(err[1]);
        if (c->out.fd < 0)
                safe_close(out[0]);
        if (c->err.fd < 0)
                safe_close(err[0]);
        run_command_free(c);
        return r;
}
