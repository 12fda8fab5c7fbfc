-- Ashgrove Veterinary Clinic, Leeds (fictional): data for toolcrib's second shipped workspace.
-- Built into data/clinic.sqlite on first use. Money is GBP, prices include VAT. "Today" in this
-- world is 2026-12-07 (a Monday).

BEGIN;

CREATE TABLE services (
    code          TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    category      TEXT NOT NULL,          -- consultation | vaccination | surgery | dental | diagnostics | travel | nursing
    price_gbp     REAL NOT NULL,
    duration_min  INTEGER NOT NULL
);
INSERT INTO services VALUES
    ('CONS-STD',   'Standard consultation',              'consultation', 52.00,  15),
    ('CONS-LONG',  'Extended consultation',              'consultation', 78.00,  30),
    ('CONS-HOME',  'Home visit',                         'consultation', 145.00, 60),
    ('VAC-DOG',    'Annual dog vaccination',             'vaccination',  64.50,  15),
    ('VAC-CAT',    'Annual cat vaccination',             'vaccination',  59.00,  15),
    ('VAC-RAB',    'Rabbit vaccination (RHD2 and myxomatosis)', 'vaccination', 55.00, 15),
    ('NEUT-CAT-M', 'Cat castration',                     'surgery',      95.00,  30),
    ('NEUT-CAT-F', 'Cat spay',                           'surgery',      125.00, 45),
    ('NEUT-DOG-M', 'Dog castration',                     'surgery',      285.00, 60),
    ('NEUT-DOG-F', 'Dog spay',                           'surgery',      420.00, 90),
    ('DENT-SP',    'Dental scale and polish',            'dental',       295.00, 60),
    ('DENT-EXT',   'Dental extraction, per tooth',       'dental',       48.00,  15),
    ('BLOOD-PRE',  'Pre-anaesthetic blood test',         'diagnostics',  68.00,  15),
    ('XRAY',       'X-ray, first view',                  'diagnostics',  180.00, 30),
    ('AHC',        'Animal Health Certificate for travel', 'travel',     165.00, 30),
    ('MICRO',      'Microchipping',                      'nursing',      22.00,  10),
    ('NAIL',       'Nail clip',                          'nursing',      12.00,  10),
    ('NURSE-CLIN', 'Nurse clinic (weight, bandage, suture removal)', 'nursing', 25.00, 15);

CREATE TABLE medicines (
    code              TEXT PRIMARY KEY,
    name              TEXT NOT NULL,
    pack              TEXT NOT NULL,
    price_gbp         REAL NOT NULL,      -- per pack
    prescription_only INTEGER NOT NULL,   -- 1: needs a vet's prescription (POM-V)
    controlled        INTEGER NOT NULL,   -- 1: a controlled drug, kept in the CD cabinet
    stock_packs       INTEGER NOT NULL,
    shelf             TEXT NOT NULL
);
INSERT INTO medicines VALUES
    ('RX-101', 'Carprofen 50 mg tablets',                 '14 tablets', 21.40, 1, 0, 12, 'Dispensary A2'),
    ('RX-102', 'Meloxicam oral suspension 1.5 mg/ml',     '32 ml bottle', 18.90, 1, 0, 7, 'Dispensary A3'),
    ('RX-104', 'Amoxicillin-clavulanate 250 mg tablets',  '10 tablets', 16.75, 1, 0, 0, 'Dispensary B1'),
    ('RX-107', 'Fluralaner chew for dogs 10-20 kg',       '1 chew',     27.60, 1, 0, 15, 'Dispensary C1'),
    ('RX-108', 'Milbemycin and praziquantel wormer',      '2 tablets',  11.20, 0, 0, 26, 'Front shelf F1'),
    ('RX-110', 'Fipronil spot-on for cats',               '3 pipettes', 14.50, 0, 0, 22, 'Front shelf F2'),
    ('RX-112', 'Gabapentin 100 mg capsules',              '30 capsules', 24.00, 1, 1, 4, 'CD cabinet'),
    ('RX-115', 'Maropitant 16 mg tablets',                '4 tablets',  19.80, 1, 0, 9, 'Dispensary B3'),
    ('RX-118', 'Ear cleaner',                             '100 ml bottle', 9.95, 0, 0, 30, 'Front shelf F3'),
    ('RX-120', 'Renal support diet for cats',             '2 kg bag',   21.00, 0, 0, 6, 'Store room S1'),
    ('RX-125', 'Thiamazole 2.5 mg tablets',               '100 tablets', 38.50, 1, 0, 3, 'Dispensary B4'),
    ('RX-130', 'Buprenorphine 0.3 mg/ml injection',       '10 ml vial', 32.00, 1, 1, 2, 'CD cabinet'),
    ('RX-133', 'Chlorhexidine wound wash',                '250 ml bottle', 7.40, 0, 0, 0, 'Front shelf F4');

CREATE TABLE owners (                    -- client contact details: not readable by sql_query
    account   TEXT PRIMARY KEY,
    name      TEXT NOT NULL,
    phone     TEXT NOT NULL,
    email     TEXT NOT NULL
);
INSERT INTO owners VALUES
    ('acct-ellery',  'Tom Ellery',       '0113 496 0217', 'tom.ellery@example.org'),
    ('acct-okafor',  'Grace Okafor',     '0113 496 0388', 'grace.okafor@example.org'),
    ('acct-brandt',  'Jonas Brandt',     '0113 496 0412', 'jonas.brandt@example.org'),
    ('acct-whitley', 'Sarah Whitley',    '0113 496 0593', 'sarah.whitley@example.org'),
    ('acct-nair',    'Dev Nair',         '0113 496 0674', 'dev.nair@example.org');

CREATE TABLE pets (
    pet_id         TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    species        TEXT NOT NULL,
    breed          TEXT NOT NULL,
    born_on        TEXT NOT NULL,
    weight_kg      REAL NOT NULL,
    owner_account  TEXT NOT NULL REFERENCES owners(account)
);
INSERT INTO pets VALUES
    ('PET-201', 'Biscuit',  'dog',    'Border Terrier',      '2019-04-12', 7.8,  'acct-ellery'),
    ('PET-202', 'Mango',    'cat',    'Domestic shorthair',  '2021-08-30', 4.2,  'acct-ellery'),
    ('PET-203', 'Hazel',    'dog',    'Labrador Retriever',  '2016-02-03', 31.5, 'acct-okafor'),
    ('PET-204', 'Pepper',   'rabbit', 'Netherland Dwarf',    '2023-05-19', 1.1,  'acct-okafor'),
    ('PET-205', 'Otto',     'dog',    'Dachshund',           '2020-11-08', 9.4,  'acct-brandt'),
    ('PET-206', 'Luna',     'cat',    'Maine Coon',          '2015-06-21', 6.9,  'acct-whitley'),
    ('PET-207', 'Scout',    'dog',    'Springer Spaniel',    '2024-03-14', 18.2, 'acct-whitley'),
    ('PET-208', 'Miso',     'cat',    'British Shorthair',   '2012-09-02', 5.1,  'acct-nair'),
    ('PET-209', 'Juniper',  'rabbit', 'Lionhead',            '2022-01-27', 1.6,  'acct-nair'),
    ('PET-210', 'Rolo',     'dog',    'Cockapoo',            '2026-09-20', 3.4,  'acct-brandt');

CREATE TABLE appointments (
    appointment_id  TEXT PRIMARY KEY,
    pet_id          TEXT NOT NULL REFERENCES pets(pet_id),
    vet             TEXT NOT NULL,
    starts_at       TEXT NOT NULL,
    service_code    TEXT NOT NULL REFERENCES services(code),
    status          TEXT NOT NULL CHECK (status IN ('booked', 'completed', 'cancelled', 'no_show')),
    version         INTEGER NOT NULL DEFAULT 1
);
INSERT INTO appointments (appointment_id, pet_id, vet, starts_at, service_code, status) VALUES
    ('APT-3001', 'PET-203', 'Dr Priya Patel', '2026-11-02T09:15', 'CONS-STD',   'completed'),
    ('APT-3002', 'PET-206', 'Dr Sean Murphy', '2026-11-04T10:30', 'BLOOD-PRE',  'completed'),
    ('APT-3003', 'PET-205', 'Dr Ana Costa',   '2026-11-09T14:00', 'VAC-DOG',    'no_show'),
    ('APT-3004', 'PET-208', 'Dr Priya Patel', '2026-11-12T11:00', 'CONS-LONG',  'completed'),
    ('APT-3005', 'PET-201', 'Dr Ana Costa',   '2026-11-18T16:15', 'VAC-DOG',    'completed'),
    ('APT-3006', 'PET-209', 'Dr Sean Murphy', '2026-11-20T09:45', 'VAC-RAB',    'cancelled'),
    ('APT-3007', 'PET-207', 'Dr Priya Patel', '2026-11-25T08:30', 'NEUT-DOG-M', 'completed'),
    ('APT-3008', 'PET-202', 'Dr Sean Murphy', '2026-11-27T15:00', 'CONS-STD',   'cancelled'),
    ('APT-3009', 'PET-206', 'Dr Sean Murphy', '2026-12-08T08:30', 'DENT-SP',    'booked'),
    ('APT-3010', 'PET-201', 'Dr Priya Patel', '2026-12-08T10:00', 'CONS-STD',   'booked'),
    ('APT-3011', 'PET-204', 'Dr Ana Costa',   '2026-12-08T11:30', 'VAC-RAB',    'booked'),
    ('APT-3012', 'PET-210', 'Dr Priya Patel', '2026-12-08T14:15', 'MICRO',      'booked'),
    ('APT-3013', 'PET-203', 'Dr Sean Murphy', '2026-12-09T09:00', 'XRAY',       'booked'),
    ('APT-3014', 'PET-202', 'Dr Ana Costa',   '2026-12-10T16:30', 'VAC-CAT',    'booked'),
    ('APT-3015', 'PET-205', 'Dr Priya Patel', '2026-12-11T08:30', 'DENT-SP',    'booked'),
    ('APT-3016', 'PET-208', 'Dr Priya Patel', '2026-12-14T13:00', 'CONS-LONG',  'booked');

CREATE TABLE slots (                    -- the bookable diary: one row per 15-minute slot offered
    vet        TEXT NOT NULL,
    starts_at  TEXT NOT NULL,
    free       INTEGER NOT NULL,        -- 1: nobody is booked in it
    PRIMARY KEY (vet, starts_at)
);
INSERT INTO slots VALUES
    ('Dr Priya Patel', '2026-12-08T09:00', 1), ('Dr Priya Patel', '2026-12-08T09:15', 1),
    ('Dr Priya Patel', '2026-12-08T10:00', 0), ('Dr Priya Patel', '2026-12-08T14:15', 0),
    ('Dr Priya Patel', '2026-12-08T15:30', 1), ('Dr Sean Murphy', '2026-12-08T08:30', 0),
    ('Dr Sean Murphy', '2026-12-08T12:00', 1), ('Dr Sean Murphy', '2026-12-08T16:45', 1),
    ('Dr Ana Costa',   '2026-12-08T11:30', 0), ('Dr Ana Costa',   '2026-12-08T13:30', 1),
    ('Dr Priya Patel', '2026-12-09T11:00', 1), ('Dr Sean Murphy', '2026-12-09T09:00', 0),
    ('Dr Sean Murphy', '2026-12-09T14:30', 1), ('Dr Ana Costa',   '2026-12-09T10:15', 1),
    ('Dr Ana Costa',   '2026-12-10T16:30', 0), ('Dr Ana Costa',   '2026-12-10T17:00', 1);

CREATE TABLE vaccinations (
    pet_id    TEXT NOT NULL REFERENCES pets(pet_id),
    vaccine   TEXT NOT NULL,
    given_on  TEXT NOT NULL,
    due_on    TEXT NOT NULL
);
INSERT INTO vaccinations VALUES
    ('PET-201', 'DHP and leptospirosis', '2026-11-18', '2027-11-18'),
    ('PET-202', 'Cat flu and enteritis', '2025-12-01', '2026-12-01'),
    ('PET-203', 'Leptospirosis',         '2025-10-14', '2026-10-14'),
    ('PET-204', 'RHD2 and myxomatosis',  '2025-12-20', '2026-12-20'),
    ('PET-205', 'DHP and leptospirosis', '2025-11-09', '2026-11-09'),
    ('PET-206', 'Cat flu and enteritis', '2026-03-02', '2027-03-02'),
    ('PET-207', 'DHP and leptospirosis', '2026-04-30', '2027-04-30'),
    ('PET-208', 'Cat flu and enteritis', '2025-06-15', '2026-06-15'),
    ('PET-209', 'RHD2 and myxomatosis',  '2025-11-20', '2026-11-20'),
    ('PET-210', 'DHP and leptospirosis (first dose)', '2026-11-15', '2026-12-06');

CREATE TABLE reorders (                 -- written by reorder_medicine
    reorder_id  INTEGER PRIMARY KEY,
    code        TEXT NOT NULL,
    packs       INTEGER NOT NULL,
    ordered_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

CREATE TABLE staff_pay (                -- confidential: not readable by sql_query
    name        TEXT PRIMARY KEY,
    role        TEXT NOT NULL,
    salary_gbp  INTEGER NOT NULL
);
INSERT INTO staff_pay VALUES
    ('Priya Patel', 'veterinary surgeon', 61500),
    ('Sean Murphy', 'veterinary surgeon', 57200),
    ('Ana Costa', 'veterinary surgeon', 54800),
    ('Rosa Lindgren', 'receptionist', 24300),
    ('Maya Clarke', 'practice manager', 46900);

COMMIT;
