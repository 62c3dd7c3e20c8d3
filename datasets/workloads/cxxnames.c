/* Functions under C++ mangled names (asm labels), so the tests can look
 * them up the way a C++ user names them without needing a C++ compiler:
 * two instances of a template, `long app::churn<int>(long&)` and
 * `long app::churn<long>(long&)`, and a member `app::Rec::size()`. */
long churn_int(long *n) __asm__("_ZN3app5churnIiEElRl");
long churn_long(long *n) __asm__("_ZN3app5churnIlEElRl");
long rec_size(void) __asm__("_ZN3app3Rec4sizeEv");

__attribute__((noinline)) long churn_int(long *n) { return *n + 1; }
__attribute__((noinline)) long churn_long(long *n) { return *n * 2; }
__attribute__((noinline)) long rec_size(void) { return 3; }

int main(int argc, char **argv)
{
    long n = argc + (argv[0] != 0);
    return (int)(churn_int(&n) + churn_long(&n) + rec_size());
}
