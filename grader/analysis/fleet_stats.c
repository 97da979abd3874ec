/* fleet_stats.c — what the fleet analyses share with the generator: time
 * stamps in UTC (no locale, no TZ: days from the civil date, then the
 * offset), the chi-square quantile and the Garwood interval, the buckets. */
#include <math.h>
#include <stdio.h>

#include "grader/analysis/fleet.h"

const struct fl_fleet_bucket fl_fleet_buckets[FL_FLEET_NBUCKETS] = {
	{"0", 0, 0},          {"1", 1, 1},         {"2-8", 2, 8},      {"9-64", 9, 64},
	{"65-255", 65, 255}, {"256-1023", 256, 1023}, {"1024+", 1024, -1},
};

int fl_fleet_bucket_of(long gpus)
{
	for (int i = 0; i < FL_FLEET_NBUCKETS; i++)
		if (gpus >= fl_fleet_buckets[i].lo && (fl_fleet_buckets[i].hi < 0 || gpus <= fl_fleet_buckets[i].hi))
			return i;
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const unsigned yoe = (unsigned)(y - era * 400);
	const unsigned doy = (153 * (m + (m > 2 ? (unsigned)-3 : 9)) + 2) / 5 + d - 1;
	const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const char *s, size_t n, size_t *i, int k, int *v)
{
	int x = 0;
	for (int j = 0; j < k; j++, (*i)++) {
		if (*i >= n || s[*i] < '0' || s[*i] > '9')
			return -1;
		x = x * 10 + (s[*i] - '0');
	}
	*v = x;
	return 0;
}

int fl_fleet_parse_time(const char *s, size_t n, int64_t *epoch)
{
	size_t i = 0;
	int y, mo, d, h, mi, se;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (digits(s, n, &i, 4, &y) || i >= n || s[i++] != '-' || digits(s, n, &i, 2, &mo) || i >= n ||
	    s[i++] != '-' || digits(s, n, &i, 2, &d) || i >= n || (s[i] != ' ' && s[i] != 'T'))
		return -1;
	i++;
	if (digits(s, n, &i, 2, &h) || i >= n || s[i++] != ':' || digits(s, n, &i, 2, &mi) || i >= n ||
	    s[i++] != ':' || digits(s, n, &i, 2, &se))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
		return -1;
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap))
		return -1;
	if (i < n && s[i] == '.') { /* fractional seconds: dropped */
		i++;
		size_t f0 = i;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == f0)
			return -1;
	}
	int off = 0;
	if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
		i++;
	} else if (i < n && (s[i] == '+' || s[i] == '-')) {
		int sign = s[i++] == '-' ? -1 : 1, oh, om = 0;
		if (digits(s, n, &i, 2, &oh))
			return -1;
		if (i < n && s[i] == ':')
			i++;
		if (i < n && digits(s, n, &i, 2, &om))
			return -1;
		if (oh > 23 || om > 59)
			return -1;
		off = sign * (oh * 3600 + om * 60);
	}
	if (i != n)
		return -1;
	*epoch = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + se - off;
	return 0;
}

void fl_fleet_format_time(int64_t t, char buf[32])
{
	int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
	int64_t sec = t - days * 86400;
	/* civil_from_days */
	int64_t z = days + 719468;
	const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	const unsigned doe = (unsigned)(z - era * 146097);
	const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t y = (int64_t)yoe + era * 400;
	const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	const unsigned mp = (5 * doy + 2) / 153;
	const unsigned d = doy - (153 * mp + 2) / 5 + 1;
	const unsigned m = mp < 10 ? mp + 3 : mp - 9;
	y += m <= 2;
	char tmp[96];
	snprintf(tmp, sizeof(tmp), "%04lld-%02u-%02u %02d:%02d:%02d+00:00", (long long)y, m, d, (int)(sec / 3600),
		 (int)(sec / 60 % 60), (int)(sec % 60));
	snprintf(buf, 32, "%.31s", tmp);
}

/* Regularized lower incomplete gamma P(a, x): series below a+1, Lentz's
 * continued fraction for Q above (Numerical Recipes 6.2). */
static double gamma_p(double a, double x)
{
	if (x <= 0)
		return 0;
	double lg = lgamma(a);
	if (x < a + 1) {
		double ap = a, sum = 1.0 / a, del = sum;
		for (int n = 0; n < 100000; n++) {
			ap += 1;
			del *= x / ap;
			sum += del;
			if (fabs(del) < fabs(sum) * 1e-15)
				break;
		}
		return sum * exp(-x + a * log(x) - lg);
	}
	double b = x + 1 - a, c = 1 / 1e-300, d = 1 / b, h = d;
	for (int i = 1; i < 100000; i++) {
		double an = -i * (i - a);
		b += 2;
		d = an * d + b;
		if (fabs(d) < 1e-300)
			d = 1e-300;
		c = b + an / c;
		if (fabs(c) < 1e-300)
			c = 1e-300;
		d = 1 / d;
		double del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-15)
			break;
	}
	return 1 - exp(-x + a * log(x) - lg) * h;
}

double fl_chi2_quantile(double p, double dof)
{
	if (p <= 0)
		return 0;
	if (p >= 1)
		return INFINITY;
	double a = dof / 2, lo = 0, hi = fmax(1, a);
	while (gamma_p(a, hi) < p)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		double mid = (lo + hi) / 2;
		if (gamma_p(a, mid) < p)
			lo = mid;
		else
			hi = mid;
	}
	return 2 * (lo + hi) / 2;
}

void fl_poisson_ci(long k, double conf, double *lo, double *hi)
{
	double a = 1 - conf;
	*lo = k > 0 ? fl_chi2_quantile(a / 2, 2.0 * (double)k) / 2 : 0;
	*hi = fl_chi2_quantile(1 - a / 2, 2.0 * (double)k + 2) / 2;
}
