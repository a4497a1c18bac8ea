/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What corrald reads of NVML's strings (executor/nvml.c): a PCI bus id turned into sysfs's
 * form, and any string copied bounded and printable. NVML's buffers need not end in a NUL
 * (a broken or hostile library): the input is handed over without one, so ASan sees any
 * read past it. */

#include "fuzz.h"
#include "nvml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char pci[NVML_PCI_ADDRESS_MAX], out[NVML_NAME_MAX];
        uint8_t *copy = malloc(size ?: 1);

        if (!copy)
                abort();
        memcpy(copy, data, size);
        if (nvml_pci_address_normalize((const char *) copy, size, pci) == 0) {
                fuzz_check(strlen(pci) == 12);
                fuzz_check(pci[4] == ':' && pci[7] == ':' && pci[10] == '.');
                for (size_t i = 0; i < 12; i++)
                        fuzz_check(i == 4 || i == 7 || i == 10 || strchr("0123456789abcdef", pci[i]));
        }
        nvml_string_copy(out, sizeof out, (const char *) copy, size);
        fuzz_check(strlen(out) < sizeof out && strlen(out) <= size);
        for (const char *p = out; *p; p++)
                fuzz_check(*p >= 0x20 && *p < 0x7f);
        free(copy);
        return 0;
}
