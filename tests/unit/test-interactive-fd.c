/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The check corrald makes of the descriptors a client passes for an interactive job:
 * the caller's own terminal, pipe, socket or file, /dev/null, nothing else. The tests
 * run as whatever user builds; "another user" is a uid that owns nothing they make. */
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
#include <sys/sysmacros.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/interactive-fd.h"

static uid_t me, other;
/* A /proc of the test's own: self/mountinfo says what file system each test's files are
 * on, whatever this machine's /tmp is. */
static char proc_dir[] = "/tmp/test-interactive-fd-proc-XXXXXX";
static int proc_fd = -1;

static void write_mountinfo(unsigned mnt_id, dev_t dev, const char *fstype) {
        char line[512];
        FILE *f;
        int fd;

        fd = openat(proc_fd, "self/mountinfo", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        f = fdopen(fd, "w");
        assert_non_null(f);
        fputs("21 1 0:19 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n", f);
        if (fstype) {
                snprintf(line, sizeof line,
                         "%u 1 %u:%u / /tmp rw,relatime shared:1 master:3 - %s /dev/x rw,errors=remount-ro\n",
                         mnt_id, major(dev), minor(dev), fstype);
                fputs(line, f);
        }
        fclose(f);
}

/* "other" is a uid that owns nothing the test makes, whoever runs it. */
static unsigned mount_id_of(int fd) {
        struct statx stx;

        assert_int_equal(statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx), 0);
        return stx.stx_mask & STATX_MNT_ID ? (unsigned) stx.stx_mnt_id : 29;
}

static int setup(void **state) {
        me = geteuid();
        other = me == 0 ? 4242 : me + 1;
        assert_non_null(mkdtemp(proc_dir));
        proc_fd = open(proc_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(proc_fd >= 0);
        assert_int_equal(mkdirat(proc_fd, "self", 0755), 0);
        return 0;
}

static int teardown(void **state) {
        unlinkat(proc_fd, "self/mountinfo", 0);
        unlinkat(proc_fd, "self", AT_REMOVEDIR);
        close(proc_fd);
        rmdir(proc_dir);
        return 0;
}

static void expect(int fd, unsigned index, uid_t uid, int want) {
        const char *why = "unset";
        int r = interactive_fd_check(proc_fd, fd, index, uid, &why);

        if (r != want)
                fail_msg("fd %d index %u uid %u: got %d (%s), want %d", fd, index, (unsigned) uid, r,
                         why ?: "ok", want);
        if (want == 0)
                assert_null(why);
        else
                assert_non_null(why);
}

static void test_pipe(void **state) {
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        /* Ours: the read end as input, the write end as output, not the other way. */
        expect(p[0], 0, me, 0);
        expect(p[1], 1, me, 0);
        expect(p[1], 2, me, 0);
        expect(p[1], 0, me, -EBADF);
        expect(p[0], 1, me, -EBADF);
        /* Another user's pipe (created by us: owned by our uid, not theirs). */
        expect(p[0], 0, other, -EPERM);
        expect(p[1], 1, other, -EPERM);
        close(p[0]);
        close(p[1]);
}

static void test_socket(void **state) {
        int s[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), 0);
        expect(s[0], 0, me, 0);
        expect(s[0], 1, me, 0);
        expect(s[1], 2, other, -EPERM);
        close(s[0]);
        close(s[1]);
}

static void test_terminal(void **state) {
        int master, slave;
        char *name;

        master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0) {
                skip(); /* no devpts in this build environment */
                return;
        }
        assert_int_equal(grantpt(master), 0);
        assert_int_equal(unlockpt(master), 0);
        name = ptsname(master);
        assert_non_null(name);
        slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        assert_true(slave >= 0);
        /* A terminal we opened is ours... */
        expect(slave, 0, me, 0);
        expect(slave, 1, me, 0);
        /* ...and not the next user's: bob cannot hand over alice's terminal. */
        expect(slave, 0, other, -EPERM);
        close(slave);
        close(master);
}

static void test_files(void **state) {
        char path[] = "/tmp/test-interactive-fd-XXXXXX";
        int fd = mkstemp(path), rd, null_in, null_out, ev, dir, opath;
        struct stat st;

        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        write_mountinfo(mount_id_of(fd), st.st_dev, "ext4");
        rd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(rd >= 0);
        expect(fd, 1, me, 0);
        expect(rd, 0, me, 0);
        expect(rd, 1, me, -EBADF); /* read-only as an output */
        expect(fd, 1, other, -EPERM);
        /* Root's callers are not checked: root may open any of these anyway. */
        if (me != 0)
                expect(fd, 1, 0, 0);
        unlink(path);

        /* /dev/null is everybody's, though root owns it. */
        null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        null_out = open("/dev/null", O_WRONLY | O_CLOEXEC);
        expect(null_in, 0, other, 0);
        expect(null_out, 2, other, 0);

        /* Other devices, directories, anonymous inodes and O_PATH are refused outright,
         * also for their owner. */
        {
                int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
                if (zero >= 0) {
                        expect(zero, 0, 0 == me ? 1 : me, -EMEDIUMTYPE);
                        close(zero);
                }
        }
        ev = eventfd(0, EFD_CLOEXEC);
        assert_true(ev >= 0);
        expect(ev, 0, me == 0 ? 1 : me, -EMEDIUMTYPE);
        dir = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        expect(dir, 0, me, -EMEDIUMTYPE);
        opath = open("/tmp", O_PATH | O_CLOEXEC);
        expect(opath, 0, me, -EBADF);
        /* Not a descriptor at all. */
        expect(9999, 0, me, -EBADF);

        close(fd);
        close(rd);
        close(null_in);
        close(null_out);
        close(ev);
        close(dir);
        close(opath);
}

static void test_mountinfo(void **state) {
        static const char text[] =
                "22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n"
                "29 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
                "35 29 0:45 / /home/a\\040b rw shared:7 master:2 - fuse.sshfs a@b: rw,user_id=1000\n"
                "36 29 0:46 / /mnt rw - nfs4 srv:/x rw\n"
                "garbage line\n"
                "37 29 0:47 / /weird rw -\n"
                "39 29 00:49 / /zero rw - ext4 /dev/z rw\n"
                "40 29 0:30 /@home /home rw - btrfs /dev/sda2 rw\n"
                "38 29 0:48 / /last rw - overlay overlay rw,lowerdir=/a";
        char buf[16];

        assert_int_equal(mountinfo_fstype(text, 0, 8, 1, buf, sizeof buf), 0);
        assert_string_equal(buf, "ext4");
        assert_int_equal(mountinfo_fstype(text, 0, 0, 45, buf, sizeof buf), 0);
        assert_string_equal(buf, "fuse.sshfs");
        assert_int_equal(mountinfo_fstype(text, 0, 0, 48, buf, sizeof buf), 0);
        assert_string_equal(buf, "overlay");
        /* Only the device field counts: 0:4 is no prefix match of 0:45. */
        assert_int_equal(mountinfo_fstype(text, 0, 0, 4, buf, sizeof buf), -ENOENT);
        assert_int_equal(mountinfo_fstype(text, 0, 0, 47, buf, sizeof buf), -ENOENT);
        /* By mount id first: a btrfs subvolume's files have a device of their own. */
        assert_int_equal(mountinfo_fstype(text, 35, 0, 0, buf, sizeof buf), 0);
        assert_string_equal(buf, "fuse.sshfs");
        assert_int_equal(mountinfo_fstype(text, 40, 0, 77, buf, sizeof buf), 0);
        assert_string_equal(buf, "btrfs");
        assert_int_equal(mountinfo_fstype(text, 41, 0, 0, buf, sizeof buf), -ENOENT);
        assert_int_equal(mountinfo_fstype(text, 3, 0, 0, buf, sizeof buf), -ENOENT); /* no prefix of 35 */
        /* Only the kernel's own spelling of a number: no leading zero. */
        assert_int_equal(mountinfo_fstype(text, 0, 0, 49, buf, sizeof buf), -ENOENT);
        assert_int_equal(mountinfo_fstype(text, 0, 8, 1, buf, 4), -ENAMETOOLONG);
        assert_int_equal(mountinfo_fstype("", 0, 8, 1, buf, sizeof buf), -ENOENT);

        assert_true(interactive_fstype_is_local("ext4"));
        assert_true(interactive_fstype_is_local("tmpfs"));
        assert_false(interactive_fstype_is_local("fuse.sshfs"));
        assert_false(interactive_fstype_is_local("fuse"));
        assert_false(interactive_fstype_is_local("overlay"));
        assert_false(interactive_fstype_is_local("nfs4"));
        assert_false(interactive_fstype_is_local("cifs"));
}

/* A regular file is taken only from a local file system of corrald's own mount table:
 * a FUSE server, an overlay over one or a network server may never answer. */
static void test_file_systems(void **state) {
        static const struct {
                const char *fstype;
                int want;
                const char *why;
        } cases[] = {
                { "ext4", 0, NULL },
                { "tmpfs", 0, NULL },
                { "fuse.sshfs", -EMEDIUMTYPE, "FUSE" },
                { "fuse", -EMEDIUMTYPE, "FUSE" },
                { "overlay", -EMEDIUMTYPE, "network or stacked" },
                { "nfs4", -EMEDIUMTYPE, "network or stacked" },
                { NULL, -EMEDIUMTYPE, "another mount namespace" },
        };
        char path[] = "/tmp/test-interactive-fd-XXXXXX";
        int fd = mkstemp(path), p[2];
        struct stat st;

        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                const char *why = NULL;

                write_mountinfo(mount_id_of(fd), st.st_dev, cases[i].fstype);
                assert_int_equal(interactive_fd_check(proc_fd, fd, 1, me, &why), cases[i].want);
                /* For root's own files too. */
                assert_int_equal(interactive_fd_check(proc_fd, fd, 1, 0, NULL), cases[i].want);
                if (cases[i].why)
                        assert_non_null(strstr(why, cases[i].why));
                /* A pipe is no file system's: whatever the table says. */
                assert_int_equal(interactive_fd_check(proc_fd, p[1], 1, me, NULL), 0);
        }
        /* No mount table to read: refused, not taken on trust. */
        unlinkat(proc_fd, "self/mountinfo", 0);
        assert_int_equal(interactive_fd_check(proc_fd, fd, 1, me, NULL), -EMEDIUMTYPE);
        unlink(path);
        close(fd);
        close(p[0]);
        close(p[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pipe),
                cmocka_unit_test(test_socket),
                cmocka_unit_test(test_terminal),
                cmocka_unit_test(test_files),
                cmocka_unit_test(test_mountinfo),
                cmocka_unit_test(test_file_systems),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
