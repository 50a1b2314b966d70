# SPDX-License-Identifier: MIT
"""make bench's second Python workload (bench/python.sh), of another shape than py_alloc.py's
loop of allocations: a small template engine, in the manner of Jinja's (templates compiled once
to Python functions that append to a list), rendering an HTML invoice page for each of PAGES
customers from real-looking data (names, addresses, dated orders of priced items), every value
HTML-escaped, money formatted, dates formatted, one page in a hundred kept. Standard library
only; the data are made from a fixed seed, so every run renders the same pages. Prints the
CPU seconds of the rendering alone (no start-up, no data making): "cpu SECONDS", then "bytes N"
(the pages' total length, the same every run). Usage: py_render.py [PAGES] (default 6000)."""
import datetime
import html
import random
import re
import sys
import time

import py_pin

FIRST = ("Ada Grace Alan Edsger Barbara Donald Frances Ken Dennis Margaret Niklaus Radia Leslie "
         "Tony John Sophie Linus Guido Bjarne Anita Shafi Whitfield Hedy Katherine").split()
LAST = ("Lovelace Hopper Turing Dijkstra Liskov Knuth Allen Thompson Ritchie Hamilton Wirth "
        "Perlman Lamport Hoare Backus Wilson Torvalds Rossum Stroustrup Borg Goldwasser Diffie "
        "Lamarr Johnson").split()
STREETS = "Elm Oak Maple Cedar Birch Willow Harbour Mill Station Church Market Bridge".split()
KINDS = "Street Road Lane Avenue Close Way".split()
CITIES = [("Lyon", "69002", "France"), ("Porto", "4050-262", "Portugal"), ("Leeds", "LS1 4AP", "UK"),
          ("Ghent", "9000", "Belgium"), ("Graz", "8010", "Austria"), ("Turku", "20100", "Finland"),
          ("Bergen", "5003", "Norway"), ("Utrecht", "3511 AB", "Netherlands")]
PRODUCTS = [("KB-104", "Mechanical keyboard <tenkeyless>", 89.0), ("MS-220", "Wireless mouse", 24.5),
            ("MN-27Q", "27\" monitor, 1440p", 279.99), ("CB-USB", "USB-C cable & adapter", 9.95),
            ("HD-SSD", "SSD 1 TB \"pro\"", 74.9), ("LP-STD", "Laptop stand", 31.0),
            ("HS-BT5", "Bluetooth headset", 59.0), ("WC-4K", "Webcam 4K", 119.0),
            ("DK-TB4", "Thunderbolt dock", 189.0), ("MP-XL", "Desk mat, XL", 19.99)]

PAGE = """<!DOCTYPE html>
<html><head><title>Invoice {{ invoice.number }} for {{ customer.name|e }}</title></head>
<body>
<h1>Invoice {{ invoice.number }}</h1>
<p class="to">{{ customer.name|e }}<br>{{ customer.street|e }}<br>{{ customer.postcode|e }} {{ customer.city|e }}<br>{{ customer.country|upper }}</p>
<p>Customer since {{ customer.since|date }} &middot; <a href="mailto:{{ customer.email|e }}">{{ customer.email|e }}</a></p>
{% for order in orders %}
<h2>Order {{ order.id }} of {{ order.date|date }}</h2>
<table>
<tr><th>SKU</th><th>Item</th><th>Qty</th><th>Price</th><th>Total</th></tr>
{% for line in order.lines %}
<tr class="{{ loop.cycle }}"><td>{{ line.sku }}</td><td>{{ line.title|e }}</td><td>{{ line.qty }}</td><td>{{ line.price|money }}</td><td>{{ line.total|money }}</td></tr>
{% endfor %}
<tr class="sum"><td colspan="4">Order total</td><td>{{ order.total|money }}</td></tr>
</table>
{% if order.note %}<p class="note">{{ order.note|e }}</p>{% endif %}
{% endfor %}
<p class="total">Due: {{ invoice.total|money }} by {{ invoice.due|date }}</p>
</body></html>
"""

FILTERS = {
    "e": lambda v: html.escape(str(v)),
    "upper": lambda v: str(v).upper(),
    "money": lambda v: "\u20ac{:,.2f}".format(v),
    "date": lambda v: v.strftime("%d %B %Y"),
}
TOKEN = re.compile(r"{{\s*(.+?)\s*}}|{%\s*(.+?)\s*%}")


def compile_template(src):
    """The template as the source of a Python function render(ctx, F) that appends its pieces
    to a list and joins them, compiled once: for, if, dotted names (dict keys), filters."""
    code = ["def render(ctx, F):", " out = []", " w = out.append"]
    depth = 1
    pos = 0

    def expr(e):
        name, *filters = [p.strip() for p in e.split("|")]
        head, *rest = name.split(".")
        v = "ctx[%r]" % head if head not in loops else head
        for r in rest:
            v = "%s[%r]" % (v, r)
        for f in filters:
            v = "F[%r](%s)" % (f, v)
        return v

    loops = []
    for m in TOKEN.finditer(src):
        text = src[pos:m.start()]
        if text:
            code.append(" " * depth + "w(%r)" % text)
        pos = m.end()
        if m.group(1):
            e = m.group(1)
            if e == "loop.cycle":
                code.append(" " * depth + "w('odd' if _i_%s %% 2 else 'even')" % loops[-1])
            else:
                v = expr(e)
                code.append(" " * depth + "w(%s)" % (v if "F[" in v else "str(%s)" % v))
        else:
            words = m.group(2).split()
            if words[0] == "for":
                var, seq = words[1], expr(words[3])
                code.append(" " * depth + "for _i_%s, %s in enumerate(%s):" % (var, var, seq))
                loops.append(var)
                depth += 1
            elif words[0] == "if":
                code.append(" " * depth + "if %s:" % expr(" ".join(words[1:])))
                depth += 1
            elif words[0] in ("endfor", "endif"):
                if words[0] == "endfor":
                    loops.pop()
                depth -= 1
    if src[pos:]:
        code.append(" " * depth + "w(%r)" % src[pos:])
    code.append(" return ''.join(out)")
    ns = {}
    exec(compile("\n".join(code), "<template>", "exec"), ns)
    return ns["render"]


def make_customers(n, rng):
    base = datetime.date(2015, 1, 1)
    customers = []
    for i in range(n):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        city, postcode, country = rng.choice(CITIES)
        orders = []
        for j in range(rng.randint(1, 4)):
            lines = []
            for _ in range(rng.randint(1, 6)):
                sku, title, price = rng.choice(PRODUCTS)
                qty = rng.randint(1, 5)
                lines.append({"sku": sku, "title": title, "qty": qty, "price": price, "total": qty * price})
            orders.append({"id": "%06d-%d" % (i, j), "date": base + datetime.timedelta(days=rng.randint(0, 3000)),
                           "lines": lines, "total": sum(x["total"] for x in lines),
                           "note": rng.choice(["", "", "Leave at the door & ring twice", "Gift: no prices <please>"])})
        customers.append({"name": "%s %s" % (first, last), "email": "%s.%s@example.org" % (first.lower(), last.lower()),
                          "street": "%d %s %s" % (rng.randint(1, 250), rng.choice(STREETS), rng.choice(KINDS)),
                          "postcode": postcode, "city": city, "country": country,
                          "since": base + datetime.timedelta(days=rng.randint(0, 3000)), "orders": orders})
    return customers


def main():
    pages = int(sys.argv[1]) if len(sys.argv) > 1 else 6000
    py_pin.pin()
    customers = make_customers(500, random.Random(55))
    t = time.process_time()
    render = compile_template(PAGE)
    kept, total = [], 0
    for i in range(pages):
        c = customers[i % len(customers)]
        inv_total = sum(o["total"] for o in c["orders"])
        page = render({"customer": c, "orders": c["orders"],
                       "invoice": {"number": "INV-%07d" % i, "total": inv_total,
                                   "due": c["orders"][-1]["date"] + datetime.timedelta(days=30)}}, FILTERS)
        total += len(page)
        if i % 100 == 0:
            kept.append(page)
    print("cpu %.4f" % (time.process_time() - t), flush=True)
    print("bytes", total, flush=True)


main()
