# Reads "CASE<TAB>VALUE" lines (a case seen in several rounds) and prints, per case in the order
# first seen, the median of its values and their range: what fa-node.sh and mm-node.sh summarise.
BEGIN { FS = "\t" }
{
  if (!($1 in n)) order[++nk] = $1
  v[$1, ++n[$1]] = $2 + 0
}
END {
  for (i = 1; i <= nk; i++) {
    k = order[i]; cnt = n[k]
    for (a = 1; a <= cnt; a++) for (b = a + 1; b <= cnt; b++) if (v[k, b] < v[k, a]) { x = v[k, a]; v[k, a] = v[k, b]; v[k, b] = x }
    med = cnt % 2 ? v[k, (cnt + 1) / 2] : (v[k, cnt / 2] + v[k, cnt / 2 + 1]) / 2
    printf "%-60s %9.1f [%.1f-%.1f] (%d rounds)\n", k, med, v[k, 1], v[k, cnt], cnt
  }
}
