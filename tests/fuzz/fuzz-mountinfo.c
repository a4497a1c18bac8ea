/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mountinfo_fstype(): corrald reads its mount table to tell where a descriptor a user
 * passed lives; the mount points in it may be users' (fusermount). The first two bytes
 * are the device's major and minor, the third the buffer's size and, in its top bit,
 * whether the first byte is a mount id instead; the rest is the table. A type found is
 * within the buffer, non-empty, one word, and a field of a line that names that device
 * or mount id. */

#include <errno.h>
#include <stdbool.h>

#include "daemon/interactive-fd.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char buf[256], *text, want[16];
        size_t bufsize;
        int r;

        if (size < 3)
                return 0;
        bool by_id = data[2] & 0x80;

        bufsize = 1 + (data[2] & 0x7f);
        text = fuzz_strndup(data + 3, size - 3);
        r = mountinfo_fstype(text, by_id ? data[0] : 0, data[0], data[1], buf, bufsize);
        fuzz_check(r == 0 || r == -ENOENT || r == -ENAMETOOLONG || r == -EINVAL);
        if (r == 0) {
                size_t len = strnlen(buf, bufsize);
                fuzz_check(len > 0 && len < bufsize);
                fuzz_check(!strpbrk(buf, " \n"));
                if (by_id && data[0] > 0)
                        snprintf(want, sizeof want, "%u ", data[0]);
                else
                        snprintf(want, sizeof want, " %u:%u ", data[0], data[1]);
                fuzz_check(strstr(text, want));
                fuzz_check(strstr(text, buf));
                (void) interactive_fstype_is_local(buf);
        }
        free(text);
        return 0;
}
