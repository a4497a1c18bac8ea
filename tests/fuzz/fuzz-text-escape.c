/* SPDX-License-Identifier: GPL-2.0-or-later */
/* text_escape_stream(): corral logs escapes a job's output, bytes of the job's choosing,
 * in pieces of whatever size reads give. The first byte picks what is allowed (bit 0:
 * tab, bit 1: newline) and the second where the input is cut in two; the rest is the
 * text. What comes out is within TEXT_ESCAPE_MAX, holds no control character but those
 * allowed and no invalid UTF-8, is the same cut or whole, and, with nothing allowed and no
 * NUL, is text_escape()'s. */

#include "fuzz.h"
#include "text-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        unsigned allow;
        const char *s;
        char *whole, *pieces, *carry, *str;
        size_t n, cut, used, len, len2, used2, k;

        if (size < 2)
                return 0;
        allow = (data[0] & 1 ? TEXT_ALLOW_TAB : 0) | (data[0] & 2 ? TEXT_ALLOW_NEWLINE : 0);
        s = (const char *) data + 2;
        n = size - 2;
        cut = n > 0 ? data[1] % (n + 1) : 0;

        whole = malloc(TEXT_ESCAPE_MAX(n) + 1);
        pieces = malloc(TEXT_ESCAPE_MAX(n) + 1);
        carry = malloc(n + 1);
        if (!whole || !pieces || !carry)
                abort();

        len = text_escape_stream(s, n, allow, false, whole, &used);
        fuzz_check(used == n);
        fuzz_check(len <= TEXT_ESCAPE_MAX(n));
        fuzz_check(text_check(whole, len, allow, NULL) == TEXT_OK);

        /* Cut in two: what the first piece leaves comes before the second. */
        len2 = text_escape_stream(s, cut, allow, true, pieces, &used2);
        fuzz_check(used2 <= cut && cut - used2 < 4);
        k = cut - used2;
        memcpy(carry, s + used2, k);
        memcpy(carry + k, s + cut, n - cut);
        len2 += text_escape_stream(carry, k + n - cut, allow, false, pieces + len2, &used2);
        fuzz_check(used2 == k + n - cut);
        fuzz_check(len2 == len && memcmp(whole, pieces, len) == 0);

        if (allow == 0 && !memchr(s, 0, n)) {
                str = fuzz_strndup((const uint8_t *) s, n);
                char *e = text_escape(str);
                fuzz_check(e && strlen(e) == len && memcmp(e, whole, len) == 0);
                free(e);
                free(str);
        }
        free(whole);
        free(pieces);
        free(carry);
        return 0;
}
