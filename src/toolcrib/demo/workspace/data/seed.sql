-- Kestrel Instruments Ltd: demo data for the toolcrib workspace.
-- Built into data/demo.sqlite by data/build_db.py. Money in contracts and payroll is EUR;
-- part prices are USD (the export price list). "Today" in this world is 2026-11-26.

CREATE TABLE contracts (
    id              INTEGER PRIMARY KEY,
    contract_ref    TEXT NOT NULL UNIQUE,
    provider        TEXT NOT NULL,
    provider_region TEXT NOT NULL CHECK (provider_region IN ('EU', 'non-EU')),
    year            INTEGER NOT NULL,
    amount          REAL NOT NULL,          -- EUR, total contract value
    signed_on       TEXT NOT NULL
);

INSERT INTO contracts (id, contract_ref, provider, provider_region, year, amount, signed_on) VALUES
    (1,  'KC-2024-001', 'Vogel Präzisionsteile GmbH', 'EU',     2024, 184000.00, '2024-02-12'),
    (2,  'KC-2024-002', 'Tamarack Components Inc.',   'non-EU', 2024,  96500.00, '2024-03-04'),
    (3,  'KC-2024-003', 'Lindqvist Elektronik AB',    'EU',     2024,  72300.00, '2024-04-18'),
    (4,  'KC-2024-004', 'Nakamura Sensor Co., Ltd.',  'non-EU', 2024, 143900.00, '2024-05-27'),
    (5,  'KC-2024-005', 'Aurora Cabling S.r.l.',      'EU',     2024,  58750.00, '2024-07-09'),
    (6,  'KC-2024-006', 'Harbourline Plastics Ltd',   'non-EU', 2024,  41200.00, '2024-08-21'),
    (7,  'KC-2024-007', 'Delacroix Optique SAS',      'EU',     2024, 126400.00, '2024-10-02'),
    (8,  'KC-2024-008', 'Alpenglow Metrology AG',     'non-EU', 2024,  88000.00, '2024-11-15'),
    (9,  'KC-2024-009', 'Brennan Logistics Ltd',      'EU',     2024,  34900.00, '2024-12-03'),
    (10, 'KC-2025-001', 'Vogel Präzisionsteile GmbH', 'EU',     2025, 212500.00, '2025-01-20'),
    (11, 'KC-2025-002', 'Lindqvist Elektronik AB',    'EU',     2025, 118000.00, '2025-02-11'),
    (12, 'KC-2025-003', 'Tamarack Components Inc.',   'non-EU', 2025, 164750.00, '2025-02-26'),
    (13, 'KC-2025-004', 'Aurora Cabling S.r.l.',      'EU',     2025,  99800.00, '2025-03-14'),
    (14, 'KC-2025-005', 'Delacroix Optique SAS',      'EU',     2025, 141250.00, '2025-04-08'),
    (15, 'KC-2025-006', 'Nakamura Sensor Co., Ltd.',  'non-EU', 2025, 121600.00, '2025-05-19'),
    (16, 'KC-2025-007', 'Brennan Logistics Ltd',      'EU',     2025,  46300.00, '2025-06-02'),
    (17, 'KC-2025-008', 'Harbourline Plastics Ltd',   'non-EU', 2025,  37800.00, '2025-06-30'),
    (18, 'KC-2025-009', 'Vogel Präzisionsteile GmbH', 'EU',     2025, 100000.00, '2025-08-05'),
    (19, 'KC-2025-010', 'Alpenglow Metrology AG',     'non-EU', 2025, 205000.00, '2025-09-09'),
    (20, 'KC-2025-011', 'Lindqvist Elektronik AB',    'EU',     2025, 176400.00, '2025-10-16'),
    (21, 'KC-2025-012', 'Aurora Cabling S.r.l.',      'EU',     2025,  63900.00, '2025-11-04'),
    (22, 'KC-2025-013', 'Tamarack Components Inc.',   'non-EU', 2025,  88250.00, '2025-11-27'),
    (23, 'KC-2025-014', 'Delacroix Optique SAS',      'EU',     2025, 104600.00, '2025-12-10'),
    (24, 'KC-2026-001', 'Vogel Präzisionsteile GmbH', 'EU',     2026, 228000.00, '2026-01-14'),
    (25, 'KC-2026-002', 'Tamarack Components Inc.',   'non-EU', 2026, 172300.00, '2026-02-03'),
    (26, 'KC-2026-003', 'Lindqvist Elektronik AB',    'EU',     2026,  91500.00, '2026-03-12'),
    (27, 'KC-2026-004', 'Nakamura Sensor Co., Ltd.',  'non-EU', 2026, 133000.00, '2026-04-22'),
    (28, 'KC-2026-005', 'Brennan Logistics Ltd',      'EU',     2026,  52800.00, '2026-05-06'),
    (29, 'KC-2026-006', 'Harbourline Plastics Ltd',   'non-EU', 2026,  45600.00, '2026-06-17'),
    (30, 'KC-2026-007', 'Aurora Cabling S.r.l.',      'EU',     2026, 117900.00, '2026-07-29'),
    (31, 'KC-2026-008', 'Delacroix Optique SAS',      'EU',     2026,  69400.00, '2026-09-08'),
    (32, 'KC-2026-009', 'Alpenglow Metrology AG',     'non-EU', 2026,  99000.00, '2026-10-01');

-- tenant: the service-desk tenant that owns the order. 'kestrel' = Kestrel's direct customers;
-- 'harrier' = Harrier Scientific, a distributor running its own desk on the same deployment.
CREATE TABLE orders (
    order_id TEXT PRIMARY KEY,
    customer TEXT NOT NULL,
    tenant   TEXT NOT NULL,
    created  TEXT NOT NULL,
    status   TEXT NOT NULL CHECK (status IN ('processing', 'awaiting_payment', 'on_hold', 'shipped', 'delivered', 'cancelled')),
    carrier  TEXT,
    tracking TEXT,
    eta      TEXT,
    items    TEXT NOT NULL
);

INSERT INTO orders (order_id, customer, tenant, created, status, carrier, tracking, eta, items) VALUES
    ('ORD-1001', 'Brightwater University, Dept. of Physics', 'kestrel', '2026-11-18', 'shipped',          'DHL Express', 'JD0146 2281 7740', '2026-11-28', '2 x PSU-4030, 4 x HLV-2205'),
    ('ORD-1002', 'Moreau Biotech SA',                        'kestrel', '2026-11-21', 'processing',       NULL,          NULL,               '2026-12-04', '10 x F2, 10 x F3'),
    ('ORD-1003', 'Oakridge Environmental Lab',               'harrier', '2026-11-12', 'delivered',        'UPS',         '1Z 9A4 71E 03 5512 8806', '2026-11-19', '1 x ENC-2000'),
    ('ORD-1004', 'Cork Institute of Materials',              'kestrel', '2026-11-09', 'delivered',        'An Post',     'CP 5531 0987 IE',  '2026-11-13', '6 x TC-K100, 2 x TC-PT100'),
    ('ORD-1005', 'Nordlicht Analytik GmbH',                  'kestrel', '2026-11-24', 'awaiting_payment', NULL,          NULL,               NULL,         '1 x CAL-0100'),
    ('ORD-1006', 'Pinecrest Water Authority',                'harrier', '2026-11-20', 'shipped',          'FedEx',       '7749 2210 5563',   '2026-11-27', '3 x F2, 3 x F1'),
    ('ORD-1007', 'St. Brendan''s Hospital, Clinical Eng.',   'kestrel', '2026-11-02', 'cancelled',        NULL,          NULL,               NULL,         '1 x PSU-0505'),
    ('ORD-1008', 'Halvorsen Marine Systems AS',              'kestrel', '2026-11-15', 'on_hold',          NULL,          NULL,               NULL,         '12 x RLY-1240, 20 x FUS-T3A15'),
    ('ORD-1009', 'Blue Mesa Semiconductor',                  'harrier', '2026-11-23', 'processing',       NULL,          NULL,               '2026-12-02', '2 x HLV-2210'),
    ('ORD-1010', 'Lisbon Polytechnic, Materials Lab',        'kestrel', '2026-11-19', 'shipped',          'DHL Express', 'JD0146 2290 1135', '2026-11-27', '5 x FAN-8025, 1 x OPT-0450'),
    ('ORD-1011', 'Cedar Point Research',                     'harrier', '2026-11-25', 'awaiting_payment', NULL,          NULL,               NULL,         '1 x PSU-4030'),
    ('ORD-1012', 'Vantaa Optics Oy',                         'kestrel', '2026-11-25', 'processing',       NULL,          NULL,               '2026-12-03', '8 x KNB-1102, 2 x CBL-USB2');

CREATE TABLE parts (
    part_number TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    price_usd   REAL NOT NULL,
    supplier    TEXT NOT NULL
);

INSERT INTO parts (part_number, name, price_usd, supplier) VALUES
    ('HLV-2205',  'High-voltage lead',                          52.00, 'Aurora Cabling S.r.l.'),
    ('HLV-2210',  'High-voltage lead, 2 m',                     61.50, 'Aurora Cabling S.r.l.'),
    ('F1',        'F1 replacement filter (coarse)',             14.20, 'Lindqvist Elektronik AB'),
    ('F2',        'F2 replacement filter (fine)',               18.75, 'Lindqvist Elektronik AB'),
    ('F3',        'F3 replacement filter (HEPA)',               42.00, 'Lindqvist Elektronik AB'),
    ('PSU-4030',  'Bench supply module, 30 V / 4 A',           389.00, 'Vogel Präzisionsteile GmbH'),
    ('PSU-0505',  'Logic rail module, 5 V / 5 A',              164.00, 'Vogel Präzisionsteile GmbH'),
    ('TC-K100',   'Type K thermocouple probe',                  23.40, 'Nakamura Sensor Co., Ltd.'),
    ('TC-PT100',  'PT100 RTD probe, 4-wire',                    47.90, 'Nakamura Sensor Co., Ltd.'),
    ('FAN-8025',  'Cooling fan, 80 mm, 24 V',                   19.60, 'Tamarack Components Inc.'),
    ('RLY-1240',  'Safety relay, 24 V coil',                    36.80, 'Tamarack Components Inc.'),
    ('FUS-T3A15', 'Fuse, T3.15 A slow-blow (pack of 10)',        7.90, 'Tamarack Components Inc.'),
    ('CBL-USB2',  'USB interface cable, 2 m',                    9.80, 'Tamarack Components Inc.'),
    ('KNB-1102',  'Control knob, 6 mm shaft',                    3.40, 'Harbourline Plastics Ltd'),
    ('ENC-2000',  'Enclosure, KB-400 bench rig',               214.00, 'Harbourline Plastics Ltd'),
    ('OPT-0450',  'Viewing window, borosilicate, 450 mm',       74.00, 'Delacroix Optique SAS'),
    ('CAL-0100',  'Calibration reference resistor, 100 ohm 0.01%', 118.00, 'Alpenglow Metrology AG');

CREATE TABLE stock (
    part_number TEXT PRIMARY KEY REFERENCES parts (part_number),
    name        TEXT NOT NULL,
    location    TEXT NOT NULL,
    available   INTEGER NOT NULL CHECK (available >= 0)
);

INSERT INTO stock (part_number, name, location, available) VALUES
    ('HLV-2205',  'High-voltage lead',                          'Cork main store, bin A-04',  14),
    ('HLV-2210',  'High-voltage lead, 2 m',                     'Cork main store, bin A-05',   6),
    ('F1',        'F1 replacement filter (coarse)',             'Cork main store, bin B-11',  22),
    ('F2',        'F2 replacement filter (fine)',               'Cork main store, bin B-12',   5),
    ('F3',        'F3 replacement filter (HEPA)',               'Cork main store, bin B-13',   0),
    ('PSU-4030',  'Bench supply module, 30 V / 4 A',           'Cork main store, rack C-01',  3),
    ('PSU-0505',  'Logic rail module, 5 V / 5 A',              'Cork main store, rack C-02',  9),
    ('TC-K100',   'Type K thermocouple probe',                  'Cork main store, bin D-02',  40),
    ('TC-PT100',  'PT100 RTD probe, 4-wire',                    'Cork main store, bin D-03',  11),
    ('FAN-8025',  'Cooling fan, 80 mm, 24 V',                   'Cork main store, bin E-07',  17),
    ('RLY-1240',  'Safety relay, 24 V coil',                    'Cork main store, bin E-09',   2),
    ('FUS-T3A15', 'Fuse, T3.15 A slow-blow (pack of 10)',       'Cork main store, bin E-10',  58),
    ('CBL-USB2',  'USB interface cable, 2 m',                   'Cork main store, bin F-01',  31),
    ('KNB-1102',  'Control knob, 6 mm shaft',                   'Cork main store, bin F-14', 120),
    ('ENC-2000',  'Enclosure, KB-400 bench rig',                'Limerick overflow store',     4),
    ('OPT-0450',  'Viewing window, borosilicate, 450 mm',       'Limerick overflow store',     7),
    ('CAL-0100',  'Calibration reference resistor, 100 ohm 0.01%', 'Metrology lab cabinet 2',  1);

-- Stock reservations made through reserve_stock (a WRITE tool: runs only after approval).
CREATE TABLE reservations (
    reservation_id INTEGER PRIMARY KEY AUTOINCREMENT,
    part_number    TEXT NOT NULL REFERENCES parts (part_number),
    quantity       INTEGER NOT NULL CHECK (quantity > 0),
    reserved_by    TEXT NOT NULL,
    created_at     TEXT NOT NULL
);

INSERT INTO reservations (part_number, quantity, reserved_by, created_at) VALUES
    ('PSU-4030', 2, 'alice', '2026-11-18T10:42:00'),
    ('HLV-2205', 4, 'alice', '2026-11-18T10:43:00');

-- Archive of the KB-400 bench rig's temperature channels (A ambient, B chamber, C DUT board,
-- D heatsink). Live values come only from the instrument (live_read_temperature, ACTUATE).
CREATE TABLE instrument_readings (
    id          INTEGER PRIMARY KEY,
    channel     TEXT NOT NULL,
    reading_c   REAL NOT NULL,
    recorded_at TEXT NOT NULL
);

INSERT INTO instrument_readings (id, channel, reading_c, recorded_at) VALUES
    (1,  'A', 21.2, '2026-11-26T08:00:00'),
    (2,  'B', 35.0, '2026-11-26T08:00:00'),
    (3,  'C', 23.6, '2026-11-26T08:00:00'),
    (4,  'D', 29.8, '2026-11-26T08:00:00'),
    (5,  'A', 21.4, '2026-11-26T08:30:00'),
    (6,  'B', 35.1, '2026-11-26T08:30:00'),
    (7,  'C', 23.9, '2026-11-26T08:30:00'),
    (8,  'D', 30.6, '2026-11-26T08:30:00'),
    (9,  'A', 21.5, '2026-11-26T09:00:00'),
    (10, 'B', 34.9, '2026-11-26T09:00:00'),
    (11, 'C', 24.1, '2026-11-26T09:00:00'),
    (12, 'D', 31.2, '2026-11-26T09:00:00');

-- Simulated bench supply state, changed only by set_supply_voltage (ACTUATE).
CREATE TABLE supply_setpoints (
    channel    TEXT PRIMARY KEY,
    volts      REAL NOT NULL,
    output     TEXT NOT NULL CHECK (output IN ('on', 'off')),
    updated_at TEXT NOT NULL,
    updated_by TEXT NOT NULL
);

INSERT INTO supply_setpoints (channel, volts, output, updated_at, updated_by) VALUES
    ('CH1', 0.0, 'off', '2026-11-26T07:55:00', 'liam'),
    ('CH2', 0.0, 'off', '2026-11-26T07:55:00', 'liam'),
    ('CH3', 5.0, 'on',  '2026-11-26T07:55:00', 'liam');

-- The staff technical library (Cork site, 2nd floor).
CREATE TABLE catalog (
    book_id          TEXT PRIMARY KEY,
    title            TEXT NOT NULL,
    author           TEXT NOT NULL,
    copies_total     INTEGER NOT NULL,
    copies_available INTEGER NOT NULL CHECK (copies_available >= 0)
);

INSERT INTO catalog (book_id, title, author, copies_total, copies_available) VALUES
    ('BK-101', 'The Art of Electronics', 'Paul Horowitz and Winfield Hill', 2, 1),
    ('BK-102', 'Practical Electronics for Inventors', 'Paul Scherz and Simon Monk', 3, 3),
    ('BK-103', 'Temperature Measurement', 'L. Michalski, K. Eckersdorf, J. Kucharski, J. McGhee', 2, 2),
    ('BK-104', 'Control System Design', 'Graham C. Goodwin, Stefan F. Graebe, Mario E. Salgado', 2, 0),
    ('BK-105', 'The Design of Everyday Things', 'Don Norman', 2, 2),
    ('BK-106', 'Measurement and Instrumentation: Theory and Application', 'Alan S. Morris and Reza Langari', 3, 2),
    ('BK-107', 'Making Embedded Systems', 'Elecia White', 2, 2),
    ('BK-108', 'High Voltage Engineering: Fundamentals', 'E. Kuffel, W. S. Zaengl and J. Kuffel', 3, 3);

CREATE TABLE holds (
    hold_id   INTEGER PRIMARY KEY AUTOINCREMENT,
    book_id   TEXT NOT NULL REFERENCES catalog (book_id),
    patron    TEXT NOT NULL,
    placed_at TEXT NOT NULL,
    status    TEXT NOT NULL CHECK (status IN ('ready', 'queued', 'collected', 'cancelled'))
);

INSERT INTO holds (book_id, patron, placed_at, status) VALUES
    ('BK-104', 'hana', '2026-11-20T14:05:00', 'queued');

-- version increases on every change; apply_calendar_change refuses a stale expected_version.
CREATE TABLE calendar_events (
    event_id  TEXT PRIMARY KEY,
    title     TEXT NOT NULL,
    starts_at TEXT NOT NULL,
    ends_at   TEXT NOT NULL,
    owner     TEXT NOT NULL,
    version   INTEGER NOT NULL DEFAULT 1
);

INSERT INTO calendar_events (event_id, title, starts_at, ends_at, owner, version) VALUES
    ('EVT-501', 'Quarterly supplier review: Vogel Präzisionsteile', '2026-12-03T10:00', '2026-12-03T11:00', 'alice', 3),
    ('EVT-502', 'Support team stand-up',                            '2026-12-01T09:15', '2026-12-01T09:30', 'alice', 1),
    ('EVT-503', 'KB-400 calibration window',                        '2026-12-02T13:00', '2026-12-02T16:00', 'liam',  2),
    ('EVT-504', 'Returns policy refresher training',                '2026-12-08T14:00', '2026-12-08T15:00', 'hana',  1),
    ('EVT-505', 'Harrier Scientific account call',                  '2026-12-04T15:00', '2026-12-04T15:30', 'alice', 1);

-- Confidential: never on the SQL allowlist. Only HR sees salary information, and only through
-- documents their group may read.
CREATE TABLE payroll (
    employee_id TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    job_title   TEXT NOT NULL,
    band        TEXT NOT NULL,
    salary_eur  INTEGER NOT NULL
);

INSERT INTO payroll (employee_id, name, job_title, band, salary_eur) VALUES
    ('E-0107', 'Alice Moreno',    'Support agent',          'K2', 41500),
    ('E-0112', 'Hana Okafor',     'HR manager',             'K4', 68000),
    ('E-0118', 'Liam O''Brien',   'Lab technician',         'K2', 43800),
    ('E-0121', 'Ada Fitzgerald',  'IT and systems admin',   'K4', 71200),
    ('E-0130', 'Ciarán Walsh',    'Tier 3 support engineer','K3', 58900),
    ('E-0133', 'Sofia Lindgren',  'Purchasing lead',        'K3', 55400);
