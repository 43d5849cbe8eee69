# plots/gantt.gp - Gantt timeline per rank from a herd timeline TSV:
# compute (grey) against communication (coloured by bucket/label) and
# waits (red outline), one row per rank, time in milliseconds.
# usage: gnuplot -c gantt.gp TIMELINE.tsv OUT_PREFIX "TITLE" [MAX_RANK]
# writes OUT_PREFIX.png and OUT_PREFIX.svg
if (ARGC < 2) { print "usage: gnuplot -c gantt.gp TIMELINE.tsv OUT_PREFIX [TITLE] [MAX_RANK]"; exit status 2 }
data = ARG1
out = ARG2
ttl = (ARGC >= 3) ? ARG3 : "herd timeline"
maxr = (ARGC >= 4) ? int(ARG4) : 31

set datafile separator "\t"
set datafile commentschars "#"
stats data skip 2 using 1 nooutput
if (STATS_max < maxr) { maxr = int(STATS_max) }
array C[8] = [0x1f77b4, 0xff7f0e, 0x2ca02c, 0x9467bd, 0x8c564b, 0xe377c2, 0x17becf, 0xbcbd22]
col(id) = C[(int(id) % 8) + 1]
# per rank row: compute on top, communication below it, waits at the bottom
y(kind, rank) = (rank > maxr || kind eq "mark") ? NaN : \
    (kind eq "compute" ? rank - 0.2 : (kind eq "wait" ? rank + 0.3 : rank + 0.08))
h(kind) = (kind eq "wait") ? 0.05 : (kind eq "compute" ? 0.16 : 0.1)

set title ttl noenhanced
set xlabel "time (ms)"
set ylabel "rank"
set yrange [maxr + 0.6:-0.6]
set ytics 1
if (maxr > 32) { set ytics 8 }
set grid xtics
set key outside right top noenhanced
set style fill solid 0.85 border -1

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1400,800 noenhanced font ",10"; set output out.".png" }
    if (fmt eq "svg") { set terminal svg size 1400,800 noenhanced font ",10"; set output out.".svg" }
    plot data skip 2 using (($9+$10)/2000):(y(strcol(5), $1)):(($10-$9)/2000):(h(strcol(5))):( \
            strcol(5) eq "compute" ? 0xaaaaaa : (strcol(5) eq "wait" ? 0xd62728 : col($13))) \
            with boxxyerror lc rgb variable notitle, \
         NaN with boxes lc rgb 0xaaaaaa title "compute", \
         NaN with boxes lc rgb 0x1f77b4 title "communication (colour: bucket / label)", \
         NaN with boxes lc rgb 0xd62728 title "wait"
    set output
}
