"""The TPC-C schema (specification clause 1.3), one set of nine tables per `tables` number, named like
sysbench-tpcc's (warehouse1, district1, ...), with its secondary indexes and optional foreign keys.

Cardinalities per warehouse (clause 1.2.1): 10 districts, 3,000 customers and 3,000 orders per district
(the last 900 of them new orders), 5-15 lines per order, 100,000 stock rows; 100,000 items per table set.
"""

from __future__ import annotations

TABLES = ("warehouse", "district", "customer", "history", "orders", "new_orders", "order_line", "stock", "item")
DIST_PER_WARE = 10
CUST_PER_DIST = 3000
ORD_PER_DIST = 3000
FIRST_UNDELIVERED = 2101  # orders 2101..3000 of each district are new orders at load time
MAX_ITEMS = 100_000
STOCK_PER_WARE = 100_000
# Rows a warehouse adds (order lines are 10 per order on average), and a table set's items.
ROWS_PER_WAREHOUSE = (1 + DIST_PER_WARE + 3 * DIST_PER_WARE * CUST_PER_DIST
                      + DIST_PER_WARE * (ORD_PER_DIST - FIRST_UNDELIVERED + 1)
                      + 10 * DIST_PER_WARE * ORD_PER_DIST + STOCK_PER_WARE)

_DDL = {
    "warehouse": """w_id SMALLINT NOT NULL, w_name VARCHAR(10), w_street_1 VARCHAR(20), w_street_2 VARCHAR(20),
        w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9), w_tax DECIMAL(4,4), w_ytd DECIMAL(12,2),
        PRIMARY KEY (w_id)""",
    "district": """d_id TINYINT NOT NULL, d_w_id SMALLINT NOT NULL, d_name VARCHAR(10), d_street_1 VARCHAR(20),
        d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9), d_tax DECIMAL(4,4),
        d_ytd DECIMAL(12,2), d_next_o_id INT, PRIMARY KEY (d_w_id, d_id)""",
    "customer": """c_id INT NOT NULL, c_d_id TINYINT NOT NULL, c_w_id SMALLINT NOT NULL, c_first VARCHAR(16),
        c_middle CHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20), c_street_2 VARCHAR(20), c_city VARCHAR(20),
        c_state CHAR(2), c_zip CHAR(9), c_phone CHAR(16), c_since DATETIME, c_credit CHAR(2),
        c_credit_lim DECIMAL(12,2), c_discount DECIMAL(4,4), c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2),
        c_payment_cnt SMALLINT, c_delivery_cnt SMALLINT, c_data VARCHAR(500),
        PRIMARY KEY (c_w_id, c_d_id, c_id)""",
    # TPC-C's history has no primary key (InnoDB adds a hidden one), as in sysbench-tpcc without force_pk.
    "history": """h_c_id INT, h_c_d_id TINYINT, h_c_w_id SMALLINT, h_d_id TINYINT, h_w_id SMALLINT,
        h_date DATETIME, h_amount DECIMAL(6,2), h_data VARCHAR(24)""",
    "orders": """o_id INT NOT NULL, o_d_id TINYINT NOT NULL, o_w_id SMALLINT NOT NULL, o_c_id INT,
        o_entry_d DATETIME, o_carrier_id TINYINT, o_ol_cnt TINYINT, o_all_local TINYINT,
        PRIMARY KEY (o_w_id, o_d_id, o_id)""",
    "new_orders": """no_o_id INT NOT NULL, no_d_id TINYINT NOT NULL, no_w_id SMALLINT NOT NULL,
        PRIMARY KEY (no_w_id, no_d_id, no_o_id)""",
    "order_line": """ol_o_id INT NOT NULL, ol_d_id TINYINT NOT NULL, ol_w_id SMALLINT NOT NULL,
        ol_number TINYINT NOT NULL, ol_i_id INT, ol_supply_w_id SMALLINT, ol_delivery_d DATETIME,
        ol_quantity TINYINT, ol_amount DECIMAL(6,2), ol_dist_info CHAR(24),
        PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)""",
    "stock": """s_i_id INT NOT NULL, s_w_id SMALLINT NOT NULL, s_quantity SMALLINT, s_dist_01 CHAR(24),
        s_dist_02 CHAR(24), s_dist_03 CHAR(24), s_dist_04 CHAR(24), s_dist_05 CHAR(24), s_dist_06 CHAR(24),
        s_dist_07 CHAR(24), s_dist_08 CHAR(24), s_dist_09 CHAR(24), s_dist_10 CHAR(24), s_ytd DECIMAL(8,0),
        s_order_cnt SMALLINT, s_remote_cnt SMALLINT, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id)""",
    "item": """i_id INT NOT NULL, i_im_id INT, i_name VARCHAR(24), i_price DECIMAL(5,2), i_data VARCHAR(50),
        PRIMARY KEY (i_id)""",
}

# Secondary indexes (the ones sysbench-tpcc adds after loading: last-name lookups, a customer's last order,
# and the foreign keys' own indexes).
_INDEXES = (
    ("customer", "idx_customer", "c_w_id, c_d_id, c_last, c_first"),
    ("orders", "idx_orders", "o_w_id, o_d_id, o_c_id, o_id"),
    ("stock", "fkey_stock_2", "s_i_id"),
    ("order_line", "fkey_order_line_2", "ol_supply_w_id, ol_i_id"),
    ("history", "fkey_history_1", "h_c_w_id, h_c_d_id, h_c_id"),
    ("history", "fkey_history_2", "h_w_id, h_d_id"),
)
# Foreign keys (clause 1.3's references), with use_fk.
_FKS = (
    ("district", "d_w_id", "warehouse", "w_id"),
    ("customer", "c_w_id, c_d_id", "district", "d_w_id, d_id"),
    ("history", "h_c_w_id, h_c_d_id, h_c_id", "customer", "c_w_id, c_d_id, c_id"),
    ("history", "h_w_id, h_d_id", "district", "d_w_id, d_id"),
    ("new_orders", "no_w_id, no_d_id, no_o_id", "orders", "o_w_id, o_d_id, o_id"),
    ("orders", "o_w_id, o_d_id, o_c_id", "customer", "c_w_id, c_d_id, c_id"),
    ("order_line", "ol_w_id, ol_d_id, ol_o_id", "orders", "o_w_id, o_d_id, o_id"),
    ("order_line", "ol_supply_w_id, ol_i_id", "stock", "s_w_id, s_i_id"),
    ("stock", "s_w_id", "warehouse", "w_id"),
    ("stock", "s_i_id", "item", "i_id"),
)


def table_names(sets: int) -> list[str]:
    return [f"{t}{n}" for n in range(1, sets + 1) for t in TABLES]


def create_sql(table: str, n: int, engine: str) -> str:
    return f"CREATE TABLE {table}{n} ({_DDL[table]}) /*! ENGINE = {engine} */"


def index_sql(n: int) -> list[str]:
    return [f"CREATE INDEX {name}{n} ON {table}{n} ({cols})" for table, name, cols in _INDEXES]


def foreign_key_sql(n: int) -> list[str]:
    out = []
    for i, (table, cols, ref, ref_cols) in enumerate(_FKS, 1):
        out.append(f"ALTER TABLE {table}{n} ADD CONSTRAINT fk{i}_{table}{n} FOREIGN KEY ({cols}) "
                   f"REFERENCES {ref}{n} ({ref_cols})")
    return out
