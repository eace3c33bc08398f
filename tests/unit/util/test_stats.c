/* test_stats.c: stats.h: the median of odd and even counts, the spread as
 * (max - min) / median, one value, and a median of 0. */
#include "tests/lib/test_util.h"

#include "runtime/util/stats.h"

#include <math.h>

static void test_median(void **state)
{
    (void)state;
    double odd[] = { 5, 1, 4, 2, 3 }, even[] = { 4, 1, 3, 2 }, one[] = { 7 };
    assert_true(stats_median(odd, 5) == 3);
    assert_true(odd[0] == 1 && odd[4] == 5); /* sorted in place */
    assert_true(stats_median(even, 4) == 2.5);
    assert_true(stats_median(one, 1) == 7);
}

static void test_summarize(void **state)
{
    (void)state;
    double v[] = { 110, 90, 100, 105, 95 };
    stats_summary s = stats_summarize(v, 5);
    assert_int_equal(s.n, 5);
    assert_true(s.median == 100 && s.min == 90 && s.max == 110);
    assert_true(fabs(s.spread - 0.2) < 1e-12);
    double one[] = { 3.5 };
    s = stats_summarize(one, 1);
    assert_true(s.median == 3.5 && s.min == 3.5 && s.max == 3.5 && s.spread == 0);
    double zero[] = { 0, 0, 1 };
    s = stats_summarize(zero, 3);
    assert_true(s.median == 0 && s.spread == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_summarize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
