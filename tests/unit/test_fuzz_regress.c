/* Replays every input in fuzz/corpus/ (the seeds) and fuzz/regress/ (inputs
 * that once crashed fuzz_wire, kept as regression tests) through the
 * fuzzer's entry point, built here without libFuzzer. An input that crashes
 * or breaks one of fuzz_wire.c's invariants aborts this program. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads path into a new buffer of exactly its size (so reads past the end
 * show under ASan). NULL on error. */
static uint8_t *slurp(const char *path, size_t *sizep)
{
        FILE *fp = fopen(path, "rb");
        if (!fp)
                return NULL;
        uint8_t *buf = NULL;
        size_t n = 0;
        if (fseek(fp, 0, SEEK_END) == 0) {
                long len = ftell(fp);
                if (len >= 0 && fseek(fp, 0, SEEK_SET) == 0) {
                        n = (size_t)len;
                        buf = malloc(n ? n : 1);
                        if (buf && fread(buf, 1, n, fp) != n) {
                                free(buf);
                                buf = NULL;
                        }
                }
        }
        fclose(fp);
        *sizep = n;
        return buf;
}

/* Runs every regular file of dir (under fuzz/); returns how many. */
static int replay_dir(const char *dir)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/fuzz/%s", KDELAY_SOURCE_DIR, dir);
        DIR *d = opendir(path);
        CU_ASSERT_PTR_NOT_NULL_FATAL(d);
        int n = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue; /* ".", "..", ".gitkeep" */
                snprintf(path, sizeof(path), "%s/fuzz/%s/%s", KDELAY_SOURCE_DIR,
                         dir, e->d_name);
                size_t size;
                uint8_t *data = slurp(path, &size);
                CU_ASSERT_PTR_NOT_NULL(data);
                if (!data)
                        continue;
                /* Named first, so a crash says which input it was. */
                fprintf(stderr, "replay %s/%s (%zu bytes)\n", dir, e->d_name,
                        size);
                CU_ASSERT_EQUAL(LLVMFuzzerTestOneInput(data, size), 0);
                free(data);
                n++;
        }
        closedir(d);
        return n;
}

static void test_corpus(void)
{
        int n = replay_dir("corpus");
        printf("\n  replayed %d seed inputs", n);
        /* Seeds for every parser the target drives. */
        CU_ASSERT(n >= 4);
}

static void test_regress(void)
{
        int n = replay_dir("regress");
        printf("\n  replayed %d regression inputs", n);
        CU_ASSERT(n >= 1);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_corpus), KD_TEST(test_regress), KD_TEST_END};
        return kd_test_run("fuzz_regress", cases, NULL, NULL);
}
